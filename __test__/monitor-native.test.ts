// MonitorRegistry.start(): native streaming with real processes and pipes
// (CONTRACT.md §2.10, §3.10).
import { afterEach, describe, expect, it } from 'vitest'

import { MonitorRegistry, stripAnsi, type MonitorTask } from '../index.js'
import { isAlive, sleep, viaScript, waitFor } from './support/process'
import type { Delivered } from './support/registry'

const registries: MonitorRegistry[] = []
function setup(options?: ConstructorParameters<typeof MonitorRegistry>[0]) {
  const registry = new MonitorRegistry(options)
  registries.push(registry)
  const notifications: Delivered[] = []
  registry.setNotificationCallback((display, model, meta) => notifications.push({ display, model, meta }))
  const events = () => notifications.filter((n) => n.meta.status === 'running').map((n) => n.display.replace(/^.*?: /, ''))
  // Settled and its terminal notification delivered (get() may run ahead of deliveries).
  const done = (entry: MonitorTask) =>
    waitFor(
      () => notifications.some((n) => n.meta.monitorId === entry.id && n.meta.status !== 'running'),
      10_000,
      'terminal notification',
    )
  const terminal = () => notifications.filter((n) => n.meta.status !== 'running')
  return { registry, notifications, events, done, terminal }
}
afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll({ notify: false })
})

describe('streaming', () => {
  it('delivers stdout and stderr lines, then completed with the exit code', async () => {
    const { registry, events, done, terminal } = setup({ throttle: false })
    const entry = registry.start({ command: "echo one; echo two >&2; printf '  three  \\r\\n\\n\\n'", description: 'demo' })
    expect(entry).toMatchObject({ kind: 'monitor', status: 'running', command: expect.stringContaining('echo one') })
    expect(entry.pid).toEqual(expect.any(Number))
    expect(entry.outputFile).toBe('')
    await done(entry)
    expect(events().sort()).toEqual(['one', 'three', 'two'])
    expect(terminal()).toHaveLength(1)
    expect(terminal()[0].display).toBe('Monitor "demo" completed. (3 events)')
    expect(terminal()[0].model).toContain('<result>Exited with code 0</result>')
    expect(registry.get(entry.id)).toBe(entry)
    expect(entry).toMatchObject({ status: 'completed', exitCode: 0, eventCount: 3, linesSeen: 5, notified: true })
    expect(entry.bytesRead).toBe('one\ntwo\n  three  \r\n\n\n'.length)
  })

  it('maps a non-zero exit to failed and a signal to failed with its name', async () => {
    const { registry, done, terminal } = setup()
    const a = registry.start({ command: 'exit 3' })
    const b = registry.start({ command: 'kill -TERM $$' })
    await done(a)
    await done(b)
    expect(a).toMatchObject({ status: 'failed', error: 'Exit code 3' })
    expect(b).toMatchObject({ status: 'failed', error: 'Killed by signal SIGTERM' })
    expect(terminal().map((n) => n.model.match(/<result>(.*)<\/result>/)?.[1]).sort()).toEqual([
      'Exit code 3',
      'Killed by signal SIGTERM',
    ])
  })

  it('a UTF-8 character and an ANSI sequence split across writes come out whole', async () => {
    const { registry, events, done } = setup({ throttle: false })
    const entry = registry.start({
      command: "printf '\\344\\275'; sleep 0.1; printf '\\240\\345\\245\\275\\n'; printf '\\033[3'; sleep 0.1; printf '1mred\\033[0m\\n'",
    })
    await done(entry)
    expect(events()).toEqual(['你好', 'red'])
  })

  it('keeps a partial line and flushes it before the terminal notification', async () => {
    const { registry, notifications, done } = setup()
    const entry = registry.start({ command: "printf 'partial'; sleep 0.1; printf ' complete\\n'; printf 'tail'" })
    await done(entry)
    expect(notifications.map((n) => n.meta.status)).toEqual(['running', 'running', 'completed'])
    expect(notifications[0].display).toContain('partial complete')
    expect(notifications[1].display).toContain(': tail')
  })

  it('never looks settled to JavaScript before its earlier events were delivered', async () => {
    const { registry, notifications, done } = setup({ throttle: false })
    const seen: string[] = []
    registry.setNotificationCallback((display, model, meta) => {
      notifications.push({ display, model, meta })
      const entry = registry.get(meta.monitorId)!
      const running = registry.getRunning().some((e) => e.id === meta.monitorId)
      seen.push(`${meta.status}:${entry.status}:${running}`)
    })
    const entry = registry.start({ command: 'echo a; echo b; echo c; exit 4' })
    await done(entry)
    // The process exited long before the JS thread saw the events (it was busy
    // starting the monitor), yet each event arrives while the entry still runs.
    expect(seen).toEqual(['running:running:true', 'running:running:true', 'running:running:true', 'failed:failed:false'])
    expect(entry).toMatchObject({ status: 'failed', error: 'Exit code 4' })
  })

  it('delivers output written after the leader exited, before completed', async () => {
    const { registry, notifications, done } = setup()
    const entry = registry.start({ command: viaScript('(sleep 0.2; echo final line) & exit 0') })
    await done(entry)
    expect(notifications.map((n) => n.display)).toEqual([
      expect.stringContaining('event #1: final line'),
      expect.stringContaining('completed. (1 events)'),
    ])
  })

  it('settles at most about 1 s after the exit when a descendant holds a pipe, and kills it', async () => {
    const { registry, events, done } = setup()
    const entry = registry.start({ command: viaScript('sleep 30 & echo $!; exit 0') })
    await done(entry)
    expect(entry.status).toBe('completed')
    const grandchild = Number(events()[0])
    expect(grandchild).toBeGreaterThan(1)
    await waitFor(() => !isAlive(grandchild), 3000, 'descendant killed')
  })

  it('a 1 MiB line without a newline gives one capped event', async () => {
    const { registry, notifications, done } = setup({ throttle: false, maxConcurrent: 16 })
    const entry = registry.start({ command: "head -c 1048576 /dev/zero | tr '\\0' a", maxEvents: 10_000 })
    await done(entry)
    const events = notifications.filter((n) => n.meta.status === 'running')
    // Once the partial line is past 4096 units, its first 4096 + '...' go on
    // and the rest of the line is discarded and counted (CONTRACT.md §2.10);
    // the registry then cuts the event to 2000 units + its marker.
    expect(events).toHaveLength(1)
    expect(events[0].model).toContain(`<result>${'a'.repeat(2000)}...[truncated]</result>`)
    expect(entry.bytesRead).toBe(1048576)
    expect(entry.linesSeen).toBe(1)
    expect(entry.truncatedBytes).toBe(1048576 - 4096)
  })

  it('one physical line gives one event: a 5 MB line, then the next line', async () => {
    // Default throttle. truncatedBytes counts the bytes of the line after its
    // first 4096 units, up to (not including) its newline.
    const { registry, notifications, done, terminal } = setup()
    const entry = registry.start({ command: "head -c 5000000 /dev/zero | tr '\\0' d; echo; echo after" })
    await done(entry)
    const events = notifications.filter((n) => n.meta.status === 'running')
    expect(events).toHaveLength(2)
    expect(events[0].model).toContain(`<result>${'d'.repeat(2000)}...[truncated]</result>`)
    expect(events[1].display).toMatch(/: after$/)
    expect(terminal()[0].meta.status).toBe('completed')
    expect(entry).toMatchObject({ status: 'completed', eventCount: 2, droppedLines: 0, linesSeen: 2 })
    expect(entry.truncatedBytes).toBe(5_000_000 - 4096)
    expect(entry.bytesRead).toBe(5_000_000 + '\nafter\n'.length)
    expect(Object.keys(entry)).toContain('truncatedBytes')
  })

  it('a 100 MB line does not use up maxEvents: 2 events, then completed', async () => {
    const { registry, notifications, done } = setup()
    const entry = registry.start({ command: "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo done" })
    await done(entry)
    const events = notifications.filter((n) => n.meta.status === 'running')
    expect(events.map((e) => e.display.replace(/^.*?: /, '').slice(0, 4))).toEqual(['aaaa', 'done'])
    expect(entry).toMatchObject({ status: 'completed', exitCode: 0, eventCount: 2 })
    expect(entry.error).toBeUndefined()
    expect(entry.truncatedBytes).toBe(100_000_000 - 4096)
    expect(entry.bytesRead).toBe(100_000_000 + '\ndone\n'.length)
  })

  it('an unterminated OSC at the end does not swallow the lines after it', async () => {
    // CONTRACT.md §3.17: at the end of the stream the held `ESC ]` is released
    // as unterminated, so the events are, line by line, what stripAnsi of the
    // whole output gives (`ESC ] 0 ; 1` goes as a short match: 2..100 remain).
    const { registry, events, done } = setup({ throttle: false })
    const entry = registry.start({ command: "printf '\\033]0;'; seq 1 100" })
    await done(entry)
    const whole = `\x1b]0;${Array.from({ length: 100 }, (_, i) => i + 1).join('\n')}\n`
    const expected = stripAnsi(whole)
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '')
    expect(expected).toEqual(Array.from({ length: 99 }, (_, i) => String(i + 2)))
    expect(events()).toEqual(expected)
    expect(entry).toMatchObject({ status: 'completed', eventCount: 99 })
  })
})

describe('throttle', () => {
  it('accounts for every non-empty line: events + dropped = lines', async () => {
    const { registry, done, terminal } = setup()
    const entry = registry.start({ command: 'for i in $(seq 1 50); do echo line $i; echo; done' })
    await done(entry)
    expect(entry.eventCount + entry.droppedLines).toBe(50)
    expect(entry.eventCount).toBeGreaterThanOrEqual(5)
    expect(entry.linesSeen).toBe(100)
    if (entry.droppedLines > 0) {
      expect(terminal()[0].display).toContain(`${entry.droppedLines} lines dropped due to throttling`)
    }
  })

  it('is configurable and per monitor across both streams', async () => {
    const { registry, done } = setup({ throttle: { burst: 2, refillMs: 60_000 } })
    const entry = registry.start({ command: 'echo a; echo b >&2; echo c; echo d >&2' })
    await done(entry)
    expect(entry.eventCount).toBe(2)
    expect(entry.droppedLines).toBe(2)
  })
})

describe('stopping', () => {
  it('max events stops after the last allowed event and kills the command', async () => {
    const { registry, notifications, done } = setup({ throttle: false })
    const entry = registry.start({ command: 'yes', maxEvents: 3 })
    await done(entry)
    await waitFor(() => notifications.length === 4, 5000, 'terminal notification')
    expect(notifications.map((n) => n.meta.status)).toEqual(['running', 'running', 'running', 'completed'])
    expect(notifications[3].model).toContain('<result>Max events reached</result>')
    expect(entry).toMatchObject({ eventCount: 3, error: 'Max events reached' })
    expect(entry.abortController.signal.aborted).toBe(true)
    await waitFor(() => !isAlive(entry.pid!), 3000, 'yes killed')
  })

  it('the idle timeout stops a silent command', async () => {
    const { registry, terminal, done } = setup()
    const entry = registry.start({ command: 'sleep 30', idleTimeoutMs: 300 })
    await done(entry)
    expect(entry).toMatchObject({ status: 'completed', error: 'Idle timeout' })
    expect(terminal()[0].model).toContain('<result>Idle timeout</result>')
    await waitFor(() => !isAlive(entry.pid!), 3000, 'sleep killed')
  })

  it('output of any kind resets the idle timeout, even throttled or blank', async () => {
    const { registry, done } = setup({ throttle: { burst: 1, refillMs: 60_000 } })
    // Ten gaps of 0.3 s: the run (3 s) outlives the 2 s idle timeout, so only the resets keep it
    // alive, and each gap leaves 1.7 s for a loaded machine's scheduling.
    const entry = registry.start({ command: 'for i in 1 2 3 4 5 6 7 8 9 10; do echo x; echo; sleep 0.3; done', idleTimeoutMs: 2000 })
    await done(entry)
    expect(entry).toMatchObject({ status: 'completed', exitCode: 0, eventCount: 1, droppedLines: 9 })
  })

  it('cancel flushes the partial line, notifies, and kills grandchildren, also ones that left the group', async () => {
    const { registry, notifications } = setup()
    const entry = registry.start({
      command: viaScript("sleep 30 & echo $!; setsid sleep 30 & echo $!; (sleep 30 & echo $!) ; printf 'last partial line'; wait"),
    })
    await waitFor(() => notifications.length >= 3, 5000, 'three pid lines')
    const pids = notifications.map((n) => Number(n.display.replace(/^.*: /, '')))
    // The partial line is read (every byte of the three pid lines and of it), not just written.
    const bytes = pids.reduce((sum, pid) => sum + String(pid).length + 1, 0) + 'last partial line'.length
    await waitFor(() => registry.get(entry.id)!.bytesRead >= bytes, 5000, 'the partial line read')
    registry.cancel(entry.id)
    expect(notifications.at(-2)!.display).toContain('last partial line')
    expect(notifications.at(-1)!.display).toContain('was cancelled')
    expect(entry.status).toBe('cancelled')
    for (const pid of [entry.pid!, ...pids]) await waitFor(() => !isAlive(pid), 3000, `pid ${pid} killed`)
  })

  it('aborting the entry controller from JavaScript cancels with a notification', async () => {
    const { registry, terminal, done } = setup()
    const entry = registry.start({ command: 'sleep 30' })
    entry.abortController.abort()
    await done(entry)
    expect(entry.status).toBe('cancelled')
    expect(terminal()).toHaveLength(1)
    expect(terminal()[0].display).toContain('was cancelled')
  })

  it('cancel({notify:false}) and reset() kill without notifications', async () => {
    const { registry, notifications } = setup()
    const a = registry.start({ command: "printf 'pending'; sleep 30" })
    const b = registry.start({ command: "printf 'pending'; sleep 30" })
    await waitFor(() => a.bytesRead > 0 && b.bytesRead > 0, 5000, 'output read')
    registry.cancel(a.id, { notify: false })
    registry.reset()
    expect(notifications).toEqual([])
    expect(registry.getAll()).toEqual([])
    for (const pid of [a.pid!, b.pid!]) await waitFor(() => !isAlive(pid), 3000, `pid ${pid} killed`)
  })
})

describe('start() options', () => {
  it('bad options throw TypeError/RangeError naming the field and spawn nothing', () => {
    const { registry } = setup()
    const bad: [unknown, typeof TypeError | typeof RangeError, RegExp][] = [
      [undefined, TypeError, /"options"/],
      [{}, TypeError, /"options.command"/],
      [{ command: 42 }, TypeError, /"options.command"/],
      [{ command: '  &  ' }, TypeError, /"options.command"/],
      [{ command: 'tail -f x & echo ready' }, TypeError, /non-final top-level background operators/],
      [{ command: 'true', maxEvents: 0 }, RangeError, /"options.maxEvents"/],
      [{ command: 'true', maxEvents: 10_001 }, RangeError, /"options.maxEvents"/],
      [{ command: 'true', maxEvents: 1.5 }, RangeError, /"options.maxEvents"/],
      [{ command: 'true', idleTimeoutMs: 600_001 }, RangeError, /"options.idleTimeoutMs"/],
      [{ command: 'true', idleTimeoutMs: '5' }, TypeError, /"options.idleTimeoutMs"/],
      [{ command: 'true', cwd: 'relative' }, TypeError, /"options.cwd"/],
      [{ command: 'true', env: { A: 1 } }, TypeError, /"options.env.A"/],
      [{ command: 'true', monitorId: '' }, RangeError, /"options.monitorId"/],
    ]
    for (const [options, type, message] of bad) {
      expect(() => registry.start(options as Parameters<MonitorRegistry['start']>[0]), JSON.stringify(options)).toThrowError(type)
      expect(() => registry.start(options as Parameters<MonitorRegistry['start']>[0])).toThrowError(message)
    }
    expect(registry.getAll()).toEqual([])
  })

  it('normalises the command, strips a trailing &, and defaults the id and description', async () => {
    const { registry, done } = setup()
    const entry = registry.start({ command: 'echo hi &' })
    expect(entry.command).toBe('echo hi')
    expect(entry.description).toBe('echo hi')
    expect(entry.id).toMatch(/^mon_[0-9a-f]{16}$/)
    await done(entry)
  })

  it('runs in cwd with env added, TERM=dumb, PAGER=cat and secrets removed', async () => {
    process.env.QWEN_SERVER_TOKEN = 'secret'
    try {
      const { registry, events, done } = setup({ throttle: false })
      const entry = registry.start({
        command: 'pwd; echo "$FOO|$TERM|$PAGER|${QWEN_SERVER_TOKEN:-none}"',
        cwd: '/tmp',
        env: { FOO: 'bar' },
      })
      await done(entry)
      expect(events()).toEqual(['/tmp', 'bar|dumb|cat|none'])
    } finally {
      delete process.env.QWEN_SERVER_TOKEN
    }
  })

  it('a spawn failure gives a failed entry with the OS error and one notification', () => {
    const { registry, terminal } = setup()
    const statuses: string[] = []
    registry.setStatusChangeCallback((e) => statuses.push(e!.status))
    const entry = registry.start({ command: 'true', cwd: '/definitely/not/here' })
    expect(entry).toMatchObject({ status: 'failed', pid: undefined })
    expect(entry.error).toMatch(/No such file or directory|ENOENT/)
    expect(terminal()).toHaveLength(1)
    expect(statuses).toEqual(['running', 'failed'])
  })

  it('the cap and duplicate ids are checked before spawning', async () => {
    const { registry } = setup({ maxConcurrent: 2 })
    const a = registry.start({ command: 'sleep 30', monitorId: 'm-a' })
    registry.start({ command: 'sleep 30', monitorId: 'm-b' })
    expect(() => registry.start({ command: 'echo should-not-run', monitorId: 'm-c' })).toThrowError(
      'Cannot start monitor: maximum concurrent monitors (2) reached. Stop an existing monitor first.',
    )
    registry.cancel('m-b')
    expect(() => registry.start({ command: 'sleep 30', monitorId: 'm-a' })).toThrowError('Monitor "m-a" is already registered.')
    expect(registry.getAll().map((e) => e.id)).toEqual(['m-a', 'm-b'])
    expect(a.status).toBe('running')
  })
})

describe('resources', () => {
  it('leaks no file descriptors and no children across many monitors', async () => {
    const { readdirSync } = await import('node:fs')
    const fds = () => readdirSync('/proc/self/fd').length
    const { registry, done } = setup({ maxConcurrent: 16 })
    const warm = registry.start({ command: 'echo warm' }) // starts the watchdog and spawner once
    await done(warm)
    const before = fds()
    const pids: number[] = []
    for (let round = 0; round < 3; round++) {
      const batch = Array.from({ length: 8 }, (_, i) => registry.start({ command: `echo ${round}-${i}; exit ${i % 2}` }))
      for (const e of batch) {
        pids.push(e.pid!)
        await done(e)
      }
    }
    await waitFor(() => fds() <= before, 3000, `fd count back to ${before} (now ${fds()})`)
    for (const pid of pids) expect(isAlive(pid)).toBe(false)
  })
})
