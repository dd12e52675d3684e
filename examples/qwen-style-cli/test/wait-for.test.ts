// The `wait_for` tool: the model waits on a background task's output through taskstream's
// waitFor instead of sleeping or polling; the texts it receives are asserted exactly.
import { afterEach, describe, expect, it } from 'vitest'

import { WAIT_FOR_SCHEMA, waitForText } from '../src/waitForTool.js'
import { call, idFrom, project, responsesSeen, scriptedModel, type Project } from './support.js'

let current: Project | undefined
afterEach(() => {
  current?.cleanup()
  current = undefined
})

const ELAPSED = String.raw`\d+ ms`

describe('wait_for tool', () => {
  it('waits on a monitor for the ready line, then on a background shell for its end', async () => {
    current = project()
    const { cli } = current
    let monitorId = ''
    let shellId = ''
    const model = scriptedModel((input) => {
      if (input.kind === 'prompt') {
        return [call('c1', 'monitor', { command: 'bash scripts/dev-server.sh', description: 'dev server' })]
      }
      if (input.kind !== 'tool_results') return []
      const last = input.responses.at(-1)!
      if (last.callId === 'c1') {
        monitorId = idFrom(last.result.llmContent)
        return [call('c2', 'wait_for', { task_id: monitorId, pattern: 'ready on (http://\\S+)', timeout_ms: 10_000 })]
      }
      if (last.callId === 'c2') {
        return [call('c3', 'run_shell_command', { command: 'echo building; sleep 0.2; exit 2', is_background: true })]
      }
      if (last.callId === 'c3') {
        shellId = /bg_[0-9a-f]{8}/.exec(last.result.llmContent)![0]
        return [call('c4', 'wait_for', { task_id: shellId })]
      }
      if (last.callId === 'c4') {
        return [
          call('c5', 'wait_for', { task_id: monitorId, pattern: 'a(b' }),
          call('c6', 'wait_for', { task_id: 'mon_nope' }),
          call('c7', 'wait_for', { task_id: monitorId, timeout_ms: 0 }),
          call('c8', 'wait_for', { task_id: monitorId, pattern: 'never', timeout_ms: 100 }),
        ]
      }
      return []
    })
    const session = cli.session(model, { maxWaitMs: 500 })
    await session.run('Start the dev server, wait until it is ready, then build.')

    const results = Object.fromEntries(responsesSeen(model.inputs).map((r) => [r.callId, r.result]))
    expect(results.c2!.llmContent).toMatch(
      new RegExp(`^Task ${monitorId} printed a matching line after ${ELAPSED}: dev-server: ready on http://localhost:5173\\nStatus: running\\.$`),
    )
    expect(results.c2!.returnDisplay).toBe(`wait_for ${monitorId}: match`)
    expect(results.c4!.llmContent).toMatch(new RegExp(`^Task ${shellId} ended before the condition was met \\(after ${ELAPSED}\\)\\. Status: failed\\.$`))
    expect(results.c5!.error?.type).toBe('invalid_tool_params')
    expect(results.c5!.llmContent).toMatch(/^Invalid pattern: .*unclosed group/s)
    expect(results.c6!).toMatchObject({ error: { type: 'task_not_found' }, llmContent: 'No background task with id "mon_nope".' })
    expect(results.c7!.error?.type).toBe('invalid_tool_params')
    expect(results.c8!.llmContent).toMatch(
      new RegExp(`^Timed out after ${ELAPSED} waiting on task ${monitorId}\\. Status: running\\. The task keeps running\\.$`),
    )
  })

  it('declares its schema and words every reason', () => {
    expect(WAIT_FOR_SCHEMA.parameters.required).toEqual(['task_id'])
    expect(Object.keys(WAIT_FOR_SCHEMA.parameters.properties)).toEqual(['task_id', 'pattern', 'quiet_ms', 'timeout_ms'])
    expect(waitForText('bg_1', { reason: 'quiet', status: 'running', elapsedMs: 1500.4 })).toBe(
      'Task bg_1 has printed nothing for the requested quiet period (waited 1500 ms). Status: running.',
    )
    expect(waitForText('bg_1', { reason: 'aborted', status: 'running', elapsedMs: 3 })).toBe(
      'The wait on task bg_1 was cancelled after 3 ms. Status: running.',
    )
  })
})
