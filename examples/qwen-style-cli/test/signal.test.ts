// The monitor tool with taskstream's recommended signal setting (API.md §6.7): the failed
// requests inside a burst reach the model (held for the throttle's next token when its bucket
// is empty), in batches, with digests of what was dropped.
import { afterEach, describe, expect, it } from 'vitest'

import { RECOMMENDED_MONITOR_SIGNAL } from '../src/cli.js'
import { call, idFrom, notificationsSeen, project, responsesSeen, scriptedModel, type Project } from './support.js'

let current: Project | undefined
afterEach(() => {
  current?.cleanup()
  current = undefined
})

describe('monitor tool with the recommended signal setting', () => {
  it('delivers both error lines of a chatty burst, batched, with template digests', async () => {
    current = project({ monitorSignal: RECOMMENDED_MONITOR_SIGNAL })
    const { cli } = current
    const model = scriptedModel((input) =>
      input.kind === 'prompt' ? [call('c1', 'monitor', { command: 'bash scripts/chatty-server.sh', description: 'api' })] : [],
    )
    const session = cli.session(model, { maxWaitMs: 1500 })
    await session.run('Start the API and watch it.')
    const id = idFrom(responsesSeen(model.inputs)[0]!.result.llmContent)
    const texts = notificationsSeen(model.inputs).map((n) => n.modelText)
    const all = texts.join('\n')
    expect(all).toContain('ERROR request 150 failed: upstream timeout')
    expect(all).toContain('ERROR request 260 failed: upstream timeout')
    expect(texts.some((t) => /<summary>Monitor "api" emitted events #\d+–\d+\.<\/summary>/.test(t))).toBe(true)
    // What was not shown, grouped by template.
    expect(all).toMatch(/\[\d+ lines not shown: \d+× INFO GET \/api\/items\/# #/)
    // Fewer notifications than lines: 300 lines came in a handful of batches.
    expect(texts.length).toBeLessThan(20)
    expect(cli.context.monitors.get(id)?.status).toBe('cancelled')
  })
})
