// Signal per token (API.md §6.7) through the built addon with real processes:
// batch windows (by time, by maxBatchLines, at stop), important lines held for the
// next token, digests of dropped lines, the option checks, and a chatty server (2000 INFO
// lines with 10 ERROR lines among them).
// No timing thresholds: a window "by time" is one that left while its process
// still runs; counts that depend on the throttle's refills are bounded, not fixed.
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { MonitorRegistry, RECOMMENDED_SIGNAL, recommendedSignal, type MonitorStartOptions, type MonitorTask } from '../index.js'
import { waitFor } from './support/process'
import type { Delivered } from './support/registry'

const RECOMMENDED = RECOMMENDED_SIGNAL
const CHATTY = join(__dirname, '..', 'bench', 'fixtures', 'chatty-server.sh')

/** Keeps a process alive after its output, so a window can only close by time or by size. */
const HOLD = 'sleep 30'

const registries: MonitorRegistry[] = []
function setup(options?: ConstructorParameters<typeof MonitorRegistry>[0]) {
  const registry = new MonitorRegistry(options)
  registries.push(registry)
  const notifications: Delivered[] = []
  registry.setNotificationCallback((display, model, meta) => notifications.push({ display, model, meta }))
  const of = (entry: MonitorTask) => notifications.filter((n) => n.meta.monitorId === entry.id)
  const events = (entry: MonitorTask) => of(entry).filter((n) => n.meta.type === 'event')
  const terminal = (entry: MonitorTask) => of(entry).find((n) => n.meta.type === 'terminal')
  const done = (entry: MonitorTask) => waitFor(() => terminal(entry) !== undefined, 20_000, 'terminal notification')
  const start = (options: MonitorStartOptions) => registry.start({ description: 'app', ...options })
  return { registry, notifications, of, events, terminal, done, start }
}
afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll({ notify: false })
})

const resultOf = (n: Delivered) => n.model.match(/<result>([\s\S]*)<\/result>/)?.[1]
const summaryOf = (n: Delivered) => n.model.match(/<summary>(.*)<\/summary>/)?.[1]
/** `printf` of these lines in one write. */
const print = (lines: string[]) => `printf '%s\\n' ${lines.map((l) => `'${l.replaceAll("'", "'\\''")}'`).join(' ')}`
const range = (from: number, to: number, prefix = 'l') => Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${from + i}`)

describe('batch windows', () => {
  it('a window leaves by time, as one notification with the texts of §6.7', async () => {
    const { start, events, of } = setup()
    const entry = start({ command: `${print(['a <1>', 'b', 'c'])}; ${HOLD}`, batchMs: 100, toolUseId: 'tu-1' })
    await waitFor(() => events(entry).length === 1, 10_000, 'the window')
    expect(entry.status).toBe('running')
    const [n] = events(entry)
    expect(n.model).toBe(
      [
        '<task-notification>',
        `<task-id>${entry.id}</task-id>`,
        '<tool-use-id>tu-1</tool-use-id>',
        '<kind>monitor</kind>',
        '<status>running</status>',
        '<event-count>3</event-count>',
        '<summary>Monitor "app" emitted events #1–3.</summary>',
        '<result>a &lt;1&gt;\nb\nc</result>',
        '</task-notification>',
      ].join('\n'),
    )
    // The display fits a screen: one summary row with the first line, the others counted.
    expect(n.display).toBe('Monitor "app" events #1–3 (+2 more): a <1>')
    expect(n.meta).toMatchObject({ type: 'event', status: 'running', eventCount: 3, lines: ['a <1>', 'b', 'c'] })
    expect(n.meta).not.toHaveProperty('droppedSince')
    expect(entry.eventCount).toBe(3)
    expect(of(entry)).toHaveLength(1)
  })

  it('a window of one line reads as the event notification, meta.lines aside', async () => {
    const { start, events } = setup()
    const entry = start({ command: `echo only; ${HOLD}`, batchMs: 50 })
    await waitFor(() => events(entry).length === 1, 10_000, 'the window')
    const [n] = events(entry)
    expect(summaryOf(n)).toBe('Monitor "app" emitted event #1.')
    expect(resultOf(n)).toBe('only')
    expect(n.display).toBe('Monitor "app" event #1: only')
    expect(n.meta.lines).toEqual(['only'])
  })

  it('a window leaves at maxBatchLines, and the open one at stop rides in the terminal notification', async () => {
    const { registry, start, events, of, done } = setup()
    const entry = start({ command: `seq 1 7; ${HOLD}`, batchMs: 10_000, maxBatchLines: 3 })
    await waitFor(() => events(entry).length === 2, 10_000, 'two full windows')
    expect(events(entry).map((n) => n.meta.lines)).toEqual([
      ['1', '2', '3'],
      ['4', '5', '6'],
    ])
    expect(entry.status).toBe('running')
    registry.cancel(entry.id)
    await done(entry)
    expect(of(entry).map((n) => `${n.meta.type}:${n.meta.eventCount}`)).toEqual(['event:3', 'event:6', 'terminal:7'])
    expect(summaryOf(of(entry)[2])).toBe('Monitor "app" was cancelled. Total events: 7.')
    expect(of(entry)[2].meta.lines).toEqual(['7'])
    expect(resultOf(of(entry)[2])).toBe('7')
  })

  it('the open window rides in the terminal notification when the process exits', async () => {
    const { start, of, done } = setup()
    const entry = start({ command: `${print(['x', 'y'])}; printf partial`, batchMs: 10_000 })
    await done(entry)
    expect(of(entry).map((n) => n.meta.type)).toEqual(['terminal'])
    expect(of(entry)[0].meta.lines).toEqual(['x', 'y', 'partial'])
    expect(resultOf(of(entry)[0])).toBe('Exited with code 0\nx\ny\npartial')
    expect(of(entry)[0].meta).toMatchObject({ status: 'completed', eventCount: 3 })
    expect(entry).toMatchObject({ eventCount: 3, droppedLines: 0 })
  })

  it('eventCount counts every line and maxEvents cuts the window', async () => {
    const { start, of, done } = setup({ throttle: false })
    const entry = start({ command: `seq 1 50; ${HOLD}`, batchMs: 200, maxEvents: 7 })
    await done(entry)
    const [batch, terminal] = of(entry)
    expect(of(entry)).toHaveLength(2)
    expect(batch.meta.lines).toEqual(range(1, 7, ''))
    expect(summaryOf(batch)).toBe('Monitor "app" emitted events #1–7.')
    expect(terminal.meta).toMatchObject({ type: 'terminal', eventCount: 7, end: { reason: 'max-events', by: 'limit' } })
    expect(resultOf(terminal)).toBe('Max events reached')
    expect(entry).toMatchObject({ status: 'completed', eventCount: 7, error: 'Max events reached' })
  })

  it('the throttle spends one token per notification and drops a window opened on an empty bucket whole', async () => {
    const throttle = { burst: 2, refillMs: 600_000 }
    const batched = setup({ throttle })
    const a = batched.start({ command: `seq 1 100; ${HOLD}`, batchMs: 10_000, maxBatchLines: 10 })
    const plain = setup({ throttle })
    const b = plain.start({ command: `seq 1 100; ${HOLD}` })
    await waitFor(() => a.linesSeen === 100 && b.linesSeen === 100, 10_000, 'all lines read')
    batched.registry.cancel(a.id)
    plain.registry.cancel(b.id)
    await batched.done(a)
    await plain.done(b)
    // Two tokens: two windows of ten lines, against two lines one by one.
    expect(batched.events(a).map((n) => n.meta.lines)).toEqual([range(1, 10, ''), range(11, 20, '')])
    expect(a).toMatchObject({ eventCount: 20, droppedLines: 80 })
    expect(plain.events(b).map((n) => resultOf(n))).toEqual(['1', '2'])
    expect(b).toMatchObject({ eventCount: 2, droppedLines: 98 })
    expect(summaryOf(batched.terminal(a)!)).toBe('Monitor "app" was cancelled. Total events: 20. 80 lines dropped due to throttling.')
  })

  it('with throttle: false every line leaves in windows (Gemini stream_output)', async () => {
    const { start, of, done } = setup({ throttle: false })
    const entry = start({ command: 'seq 1 45', batchMs: 10_000 })
    await done(entry)
    // The last five ride in the terminal notification.
    expect(of(entry).map((n) => `${n.meta.type}:${n.meta.lines?.length}`)).toEqual(['event:20', 'event:20', 'terminal:5'])
    expect(entry).toMatchObject({ eventCount: 45, droppedLines: 0 })
  })
})

describe('importance lane', () => {
  it('important lines that find the bucket empty are held and leave together at the refill, with no further output', async () => {
    const { start, events, of } = setup({ throttle: { burst: 1, refillMs: 1000 } })
    // One write: the first line takes the token, the rest find the bucket empty.
    const lines = ['INFO first', 'INFO dropped', ...range(1, 25, 'ERROR request failed ')]
    const entry = start({ command: `${print(lines)}; ${HOLD}`, important: 'ERROR' })
    await waitFor(() => events(entry).length === 2, 10_000, 'the held lines')
    expect(entry.status).toBe('running')
    const [first, held] = events(entry)
    expect(resultOf(first)).toBe('INFO first')
    // At most maxBatchLines (20) are held; the 5 after them are dropped like any line.
    expect(held.meta.lines).toEqual(range(1, 20, 'ERROR request failed '))
    expect(summaryOf(held)).toBe('Monitor "app" emitted events #2–21.')
    expect(held.meta).toMatchObject({ type: 'event', eventCount: 21 })
    expect(entry).toMatchObject({ eventCount: 21, droppedLines: 6 })
    expect(of(entry)).toHaveLength(2)
  })

  it('with batchMs the refill delivers a window that starts with the held lines, with no further output', async () => {
    const { start, events, of } = setup({ throttle: { burst: 1, refillMs: 1000 } })
    const lines = [...range(1, 25, 'INFO '), 'ERROR boom', 'INFO after']
    const entry = start({ command: `${print(lines)}; ${HOLD}`, batchMs: 200, maxBatchLines: 10, important: 'ERROR' })
    await waitFor(() => events(entry).length === 2, 10_000, 'the held line')
    expect(entry.status).toBe('running')
    // Window 1 took the only token; 11–20, 21–25 and `INFO after` met dropped windows;
    // `ERROR boom` was held and left in the window the next token paid for (dated from
    // when it was held, so already due at the refill).
    expect(events(entry).map((n) => n.meta.lines)).toEqual([range(1, 10, 'INFO '), ['ERROR boom']])
    expect(entry).toMatchObject({ eventCount: 11, droppedLines: 16 })
    expect(of(entry)).toHaveLength(2)
  })

  it('held lines ride in the terminal notification, in their order, before the digest, whatever the bucket', async () => {
    const { start, of, done } = setup({ throttle: { burst: 1, refillMs: 600_000 } })
    const entry = start({ command: print(['INFO first', 'ERROR a', 'INFO x', 'ERROR b']), important: 'ERROR', digest: true })
    await done(entry)
    expect(of(entry).map((n) => n.meta.type)).toEqual(['event', 'terminal'])
    const end = of(entry)[1]
    expect(end.meta.lines).toEqual(['ERROR a', 'ERROR b'])
    expect(end.meta.droppedSince).toBe(1)
    expect(resultOf(end)).toBe('Exited with code 0\nERROR a\nERROR b\n[1 line dropped since the last notification: INFO x]')
    expect(end.meta).toMatchObject({ status: 'completed', eventCount: 3 })
    expect(end.display).toBe('Monitor "app" completed. (3 events, 1 lines dropped due to throttling)\nERROR a\nERROR b')
  })
})

describe('digests', () => {
  it('the next event carries the lines dropped since the previous notification, first and last quoted', async () => {
    const { start, events, of, done } = setup({ throttle: { burst: 2, refillMs: 600_000 } })
    const entry = start({
      command: print(['one', 'two', "d1 <x> & 'q'", 'd2', 'd3', 'ERROR boom', 'd4']),
      important: 'ERROR',
      digest: true,
    })
    await done(entry)
    // `ERROR boom` was held (the bucket was empty) and rode in the terminal notification,
    // with the digest of d1–d4 after it.
    expect(events(entry)).toHaveLength(2)
    const end = of(entry).at(-1)!
    expect(end.meta.type).toBe('terminal')
    expect(end.meta.droppedSince).toBe(4)
    expect(end.meta.lines).toEqual(['ERROR boom'])
    expect(resultOf(end)).toBe(
      'Exited with code 0\nERROR boom\n[4 lines dropped since the last notification; first: d1 &lt;x&gt; &amp; &apos;q&apos;; last: d4]',
    )
    expect(events(entry)[0].meta).not.toHaveProperty('droppedSince')
  })

  it('the terminal notification ends its result with the digest line (singular for one line)', async () => {
    const { start, terminal, done } = setup({ throttle: { burst: 2, refillMs: 600_000 } })
    const one = start({ command: print(['a', 'b', `${'y'.repeat(300)}`]), digest: true })
    const many = start({ command: `${print(['a', 'b', 'c', 'd', 'e'])}; exit 3`, digest: true })
    await done(one)
    await done(many)
    expect(resultOf(terminal(one)!)).toBe(`Exited with code 0\n[1 line dropped since the last notification: ${'y'.repeat(200)}]`)
    expect(terminal(one)!.meta.droppedSince).toBe(1)
    expect(resultOf(terminal(many)!)).toBe('Exit code 3\n[3 lines dropped since the last notification; first: c; last: e]')
    expect(summaryOf(terminal(many)!)).toBe('Monitor "app" failed. Total events: 2. 3 lines dropped due to throttling.')
  })

  it('a settled notification follows the flushed window and carries the digest', async () => {
    const { start, of, registry, done } = setup({ throttle: { burst: 1, refillMs: 600_000 } })
    const entry = start({ command: `${print(['a', 'b', 'c'])}; ${HOLD}`, batchMs: 10_000, digest: true, settleMs: 100 })
    await waitFor(() => of(entry).some((n) => n.meta.type === 'settled'), 10_000, 'settled')
    const [first, settled] = of(entry)
    expect(first.meta).toMatchObject({ type: 'event', lines: ['a', 'b', 'c'] })
    expect(settled.meta).toMatchObject({ type: 'settled', status: 'running', eventCount: 3 })
    expect(settled.meta).not.toHaveProperty('droppedSince')
    registry.cancel(entry.id)
    await done(entry)

    const dropped = start({ command: `${print(['a', 'b', 'c', 'd'])}; ${HOLD}`, maxBatchLines: 2, batchMs: 10_000, digest: true, settleMs: 100 })
    await waitFor(() => of(dropped).some((n) => n.meta.type === 'settled'), 10_000, 'settled')
    const settledAfterDrops = of(dropped).find((n) => n.meta.type === 'settled')!
    expect(of(dropped).filter((n) => n.meta.type === 'event').map((n) => n.meta.lines)).toEqual([['a', 'b']])
    expect(settledAfterDrops.meta.droppedSince).toBe(2)
    expect(resultOf(settledAfterDrops)).toBe('d\n[2 lines dropped since the last notification; first: c; last: d]')
  })
})

describe('defaults and options', () => {
  it('without the options every text and meta key stays the TypeScript registry’s', async () => {
    const texts = async (options: Partial<MonitorStartOptions>) => {
      const { start, of, done } = setup({ throttle: { burst: 2, refillMs: 600_000 } })
      const entry = start({ command: print(['a', 'b', 'c']), monitorId: 'same', ...options })
      await done(entry)
      return of(entry).map((n) => ({ display: n.display, model: n.model, keys: Object.keys(n.meta).sort() }))
    }
    const plain = await texts({})
    expect(plain.map((n) => n.display)).toEqual([
      'Monitor "app" event #1: a',
      'Monitor "app" event #2: b',
      'Monitor "app" completed. (2 events, 1 lines dropped due to throttling)',
    ])
    expect(plain[0].keys).toEqual(['eventCount', 'monitorId', 'ownerAgentId', 'status', 'todoWorkChainId', 'toolUseId', 'type'])
    expect(plain[2].keys).toEqual(['end', 'eventCount', 'monitorId', 'ownerAgentId', 'status', 'todoWorkChainId', 'toolUseId', 'type'])
    expect(await texts({ batchMs: undefined, maxBatchLines: 5, important: undefined, digest: false })).toEqual(plain)
  })

  it('bad options throw before anything is spawned', () => {
    const { registry } = setup()
    const dir = mkdtempSync(join(tmpdir(), 'signal-lane-'))
    const marker = join(dir, 'spawned')
    const start = (options: Record<string, unknown>) => () => registry.start({ command: `touch ${marker}`, ...options } as MonitorStartOptions)
    expect(start({ batchMs: '200' })).toThrow(TypeError)
    expect(start({ batchMs: '200' })).toThrow('The "options.batchMs" property must be of type number.')
    expect(start({ batchMs: 9 })).toThrow(RangeError)
    expect(start({ batchMs: 9 })).toThrow('The value of "options.batchMs" is out of range. It must be an integer >= 10 && <= 10000. Received 9')
    expect(start({ batchMs: 10_001 })).toThrow(RangeError)
    expect(start({ batchMs: 200.5 })).toThrow(RangeError)
    expect(start({ maxBatchLines: 0 })).toThrow('The value of "options.maxBatchLines" is out of range. It must be an integer >= 1 && <= 1000. Received 0')
    expect(start({ maxBatchLines: 1001 })).toThrow(RangeError)
    expect(start({ maxBatchLines: null })).toThrow(TypeError)
    expect(start({ important: 5 })).toThrow(TypeError)
    expect(start({ important: 5 })).toThrow('The "options.important" property must be of type string.')
    expect(start({ important: 'error|(unclosed' })).toThrow(SyntaxError)
    expect(start({ important: 'error|(unclosed' })).toThrow(/^The "options\.important" property is not a valid regular expression: regex parse error:[\s\S]*unclosed group/)
    expect(start({ digest: 'yes' })).toThrow(TypeError)
    expect(start({ digest: 'yes' })).toThrow("The \"options.digest\" property must be a boolean or 'templates'.")
    expect(start({ sampleLines: 1 })).toThrow(TypeError)
    expect(start({ sampleLines: 1 })).toThrow('The "options.sampleLines" option needs "options.batchMs", which is not set')
    expect(start({ batchMs: 200, sampleLines: 1001 })).toThrow(RangeError)
    expect(start({ important: 'x', contextAfter: 3 })).toThrow('The "options.contextAfter" option needs "options.sampleLines", which is not set')
    expect(start({ batchMs: 200, sampleLines: 1, contextBefore: 3 })).toThrow('The "options.contextBefore" option needs "options.important", which is not set')
    expect(start({ ...RECOMMENDED_SIGNAL, contextBefore: 101 })).toThrow(RangeError)
    expect(start({ ...RECOMMENDED_SIGNAL, contextAfter: 1.5 })).toThrow(RangeError)
    expect(registry.getRunning()).toEqual([])
    expect(existsSync(marker)).toBe(false)
  })

  it('fed mode is unchanged: emitEvent knows nothing of the options', () => {
    const { registry, notifications } = setup()
    const entry = registry.register({
      monitorId: 'fed',
      command: 'tail',
      description: 'fed',
      status: 'running',
      startTime: Date.now(),
      eventCount: 0,
      lastEventTime: Date.now(),
      maxEvents: 1000,
      idleTimeoutMs: 300_000,
      droppedLines: 0,
      outputFile: '',
      abortController: new AbortController(),
    })
    registry.emitEvent(entry.id, 'one line')
    expect(notifications).toHaveLength(1)
    expect(summaryOf(notifications[0])).toBe('Monitor "fed" emitted event #1.')
    expect(notifications[0].meta).not.toHaveProperty('lines')
  })
})

describe('a chatty server', () => {
  it('default settings lose every error line; the recommended setting delivers all ten', async () => {
    // 2000 INFO lines over ~4 s (50 every 100 ms) with 10 `ERROR request … failed`
    // lines spread through them; both monitors run at once, on the same timing.
    const { start, of, done } = setup()
    const plain = start({ command: `bash ${CHATTY}` })
    const recommended = start({ command: `bash ${CHATTY}`, ...RECOMMENDED })
    await done(plain)
    await done(recommended)
    const errorsIn = (entry: MonitorTask) =>
      of(entry)
        .filter((n) => n.meta.type === 'event' || n.meta.lines)
        .flatMap((n) => n.meta.lines ?? [resultOf(n)!])
        .filter((line) => /^ERROR request \d+ failed/.test(line)).length
    // Observed: 0/10. Each refill's token goes to the first line of a tick, never an ERROR.
    expect(errorsIn(plain)).toBe(0)
    expect(errorsIn(recommended)).toBe(10)
    // Every window is bounded by maxBatchLines (20).
    expect(of(recommended).every((n) => (n.meta.lines?.length ?? 0) <= 20)).toBe(true)
    // Notifications: no second bucket, and the end rides in the terminal notification.
    expect(of(recommended).length).toBeLessThanOrEqual(of(plain).length)
    expect(plain.droppedLines + plain.eventCount).toBe(2000)
    expect(recommended.droppedLines + recommended.eventCount).toBe(2000)
    // What was dropped since the previous notification is said in the next one.
    expect(of(recommended).some((n) => (n.meta.droppedSince ?? 0) > 0)).toBe(true)
  })
})

describe('RECOMMENDED_SIGNAL and context', () => {
  it('is one frozen definition in the addon', () => {
    expect(Object.isFrozen(RECOMMENDED_SIGNAL)).toBe(true)
    expect(RECOMMENDED_SIGNAL).toEqual(recommendedSignal())
    expect(RECOMMENDED_SIGNAL).toMatchObject({ batchMs: 1000, sampleLines: 1, digest: 'templates' })
    expect(() => {
      ;(RECOMMENDED_SIGNAL as { batchMs: number }).batchMs = 5
    }).toThrow(TypeError)
  })

  it('a failure travels with its detail and the traceback before it; the stream goes to a template digest', async () => {
    const { start, of, done } = setup()
    const lines = [
      ...range(1, 30, 'INFO  GET /api/items/'),
      'Traceback (most recent call last):',
      'File "app.py", line 9, in main',
      'ValueError: bad port',
      'Expected: 3000',
      'Received: 70000',
      ...range(31, 60, 'INFO  GET /api/items/'),
    ]
    // A window longer than the run: everything leaves with the terminal notification.
    const entry = start({ command: print(lines), ...RECOMMENDED_SIGNAL, batchMs: 10_000 })
    await done(entry)
    const delivered = of(entry).flatMap((n) => n.meta.lines ?? [])
    expect(delivered).toEqual(['INFO  GET /api/items/1', 'Traceback (most recent call last):', 'File "app.py", line 9, in main', 'ValueError: bad port', 'Expected: 3000', 'Received: 70000'])
    // One window (its one sample, then the failure with its context) rode in the terminal notification.
    const end = of(entry).at(-1)!
    expect(of(entry).map((n) => n.meta.type)).toEqual(['terminal'])
    expect(resultOf(end)).toMatch(/^Exited with code 0\nINFO  GET \/api\/items\/1\nTraceback[\s\S]*Received: 70000\n\[\d+ lines not shown: \d+× INFO  GET \/api\/items\/#/)
    expect(end.display.split('\n')).toEqual(['Monitor "app" completed. (6 events, 59 lines dropped due to throttling)', 'ValueError: bad port'])
    expect(entry).toMatchObject({ eventCount: 6, droppedLines: 59 })
  })
})
