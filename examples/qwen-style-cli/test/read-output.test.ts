// The `read_background_output` tool: the model polls a background shell's output with the
// next_offset it was given, and greps it; the texts it receives are asserted exactly.
import { afterEach, describe, expect, it } from 'vitest'

import { READ_OUTPUT_SCHEMA } from '../src/readOutputTool.js'
import { call, project, responsesSeen, scriptedModel, type Project } from './support.js'

let current: Project | undefined
afterEach(() => {
  current?.cleanup()
  current = undefined
})

describe('read_background_output tool', () => {
  it('reads only what is new, greps, and refuses clearly', async () => {
    current = project()
    const { cli } = current
    let shellId = ''
    const model = scriptedModel((input) => {
      if (input.kind === 'prompt') {
        return [
          call('c1', 'run_shell_command', {
            command: "printf 'step 1\\n\\033[31mERROR one\\033[0m\\n'; sleep 2; printf 'progress 1\\rprogress 2\\nstep 2\\n'",
            is_background: true,
          }),
        ]
      }
      if (input.kind !== 'tool_results') return []
      const last = input.responses.at(-1)!
      if (last.callId === 'c1') {
        shellId = /bg_[0-9a-f]{8}/.exec(last.result.llmContent)![0]
        return [call('c2', 'wait_for', { task_id: shellId, quiet_ms: 300 })]
      }
      if (last.callId === 'c2') return [call('c3', 'read_background_output', { task_id: shellId })]
      if (last.callId === 'c3') {
        const next = Number(/next_offset: (\d+)/.exec(last.result.llmContent)![1])
        return [call('c4', 'wait_for', { task_id: shellId }), call('c5', 'read_background_output', { task_id: shellId, offset: next })]
      }
      if (last.callId === 'c5') {
        return [
          call('c6', 'read_background_output', { task_id: shellId, grep: '^(ERROR|step)' }),
          call('c7', 'read_background_output', { task_id: shellId, grep: 'a(b' }),
          call('c8', 'read_background_output', { task_id: 'bg_00000000' }),
          call('c9', 'read_background_output', { task_id: shellId, offset: -1 }),
        ]
      }
      return []
    })
    await cli.session(model, { maxWaitMs: 500 }).run('Run the build in the background and check its output.')
    const r = Object.fromEntries(responsesSeen(model.inputs).map((x) => [x.callId, x.result]))
    expect(r.c3!.llmContent).toBe(`Shell ${shellId} is running. Output bytes 0–17 of 17; next_offset: 17.\nstep 1\nERROR one\n`)
    expect(r.c5!.llmContent).toBe(`Shell ${shellId} is completed. Output bytes 17–46 of 46; next_offset: 46.\nprogress 2\nstep 2\n`)
    expect(r.c6!.llmContent).toBe(`Shell ${shellId} is completed. Output bytes 0–46 of 46, 3 matching lines; next_offset: 46.\nstep 1\nERROR one\nstep 2\n`)
    expect(r.c7!.error?.type).toBe('invalid_tool_params')
    expect(r.c7!.llmContent).toMatch(/^Invalid grep: .*unclosed group/s)
    expect(r.c8!).toMatchObject({ error: { type: 'task_not_found' } })
    expect(r.c9!.error?.type).toBe('invalid_tool_params')
    expect(READ_OUTPUT_SCHEMA.parameters.required).toEqual(['task_id'])
  })
})
