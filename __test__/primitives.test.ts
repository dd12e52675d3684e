// API.md §6.1–6.3 and §6.6 through the built addon, with real processes:
// waitFor on monitors, shells and fed entries; settled notifications; who
// ended a task; keep-alive rules.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import {
  BackgroundShellRegistry,
  executeBackground,
  MonitorRegistry,
  type MonitorNotificationMeta,
  type ShellNotificationMeta,
} from '../index.js'
import { waitFor } from './support/process'
import { registration } from './support/registry'

interface Got<M> {
  display: string
  model: string
  meta: M
}

const registries: MonitorRegistry[] = []
function monitors(options?: ConstructorParameters<typeof MonitorRegistry>[0]) {
  const registry = new MonitorRegistry(options)
  registries.push(registry)
  const notes: Got<MonitorNotificationMeta>[] = []
  registry.setNotificationCallback((display, model, meta) => notes.push({ display, model, meta }))
  const terminal = (id: string) =>
    waitFor(() => notes.some((n) => n.meta.monitorId === id && n.meta.type === 'terminal'), 10_000, 'terminal')
  return { registry, notes, terminal }
}

const shellRegistries: BackgroundShellRegistry[] = []
function shells() {
  const registry = new BackgroundShellRegistry()
  shellRegistries.push(registry)
  const notes: Got<ShellNotificationMeta>[] = []
  registry.setNotificationCallback((display, model, meta) => notes.push({ display, model, meta }))
  const outputDir = mkdtempSync(join(tmpdir(), 'taskstream-primitives-'))
  const run = (command: string, extra: Record<string, unknown> = {}) =>
    executeBackground({ command, cwd: '/tmp', outputDir, registry, ...extra })
  return { registry, notes, run, outputDir }
}

afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll({ notify: false })
  for (const r of shellRegistries.splice(0)) r.abortAll()
})

describe('waitFor on native monitors', () => {
  it('resolves match with the sanitised line, then the task keeps running', async () => {
    const { registry } = monitors()
    const m = registry.start({ command: "echo starting; sleep 0.2; printf 'ready on \\033[32m8080\\033[0m\\n'; sleep 30" })
    const result = await registry.waitFor(m.id, { match: 'ready on (\\d+)$', timeoutMs: 10_000 })
    expect(result).toEqual({ reason: 'match', line: 'ready on 8080', status: 'running', elapsedMs: expect.any(Number) })
    expect(registry.get(m.id)?.status).toBe('running')
  })

  it('sees a line the throttle drops', async () => {
    const { registry, notes } = monitors({ throttle: { burst: 1, refillMs: 60_000 } })
    const m = registry.start({
      command: 'sleep 0.2; for i in $(seq 1 200); do echo noise $i; done; echo BUILD OK; sleep 30',
      description: 'build',
    })
    const result = await registry.waitFor(m.id, { match: '^BUILD OK$', timeoutMs: 10_000 })
    expect(result.reason).toBe('match')
    expect(result.line).toBe('BUILD OK')
    expect(notes.filter((n) => n.meta.type === 'event').map((n) => n.display)).not.toContainEqual(
      expect.stringContaining('BUILD OK'),
    )
  })

  it('resolves quiet, timeout and exit, first condition wins', async () => {
    const { registry } = monitors()
    const quiet = registry.start({ command: 'echo hi; sleep 30' })
    const slow = registry.start({ command: 'sleep 30' })
    const failing = registry.start({ command: 'echo bye; exit 3' })
    const [q, t, e] = await Promise.all([
      registry.waitFor(quiet.id, { quietMs: 300, timeoutMs: 20_000 }),
      registry.waitFor(slow.id, { match: 'never', timeoutMs: 200, quietMs: 20_000 }),
      registry.waitFor(failing.id),
    ])
    expect(q).toMatchObject({ reason: 'quiet', status: 'running' })
    expect(q.elapsedMs).toBeGreaterThanOrEqual(300)
    expect(t).toMatchObject({ reason: 'timeout', status: 'running' })
    expect(e).toMatchObject({ reason: 'exit', status: 'failed' })
    expect(e.line).toBeUndefined()
    // Settled already: at once, with its status.
    expect(await registry.waitFor(failing.id, { match: 'x' })).toMatchObject({ reason: 'exit', status: 'failed' })
  })

  it('resolves aborted from a signal, and at once for an aborted one', async () => {
    const { registry } = monitors()
    const m = registry.start({ command: 'sleep 30' })
    const already = await registry.waitFor(m.id, { signal: AbortSignal.abort() })
    expect(already).toMatchObject({ reason: 'aborted', status: 'running', elapsedMs: 0 })
    const controller = new AbortController()
    const pending = registry.waitFor(m.id, { match: 'x', signal: controller.signal })
    setTimeout(() => controller.abort(), 50)
    expect(await pending).toMatchObject({ reason: 'aborted', status: 'running' })
  })

  it('a wait that ends as it begins leaves no listener on its signal', async () => {
    // Inside the abort of a reset, a native monitor is still registered but no longer followed:
    // a wait begun there ends at once, and nothing stays on its signal.
    const { registry } = monitors()
    const m = registry.start({ command: 'sleep 30' })
    const listeners = { added: 0, removed: 0 }
    const signal = {
      aborted: false,
      addEventListener: () => void listeners.added++,
      removeEventListener: () => void listeners.removed++,
    }
    let begun: Promise<unknown> | undefined
    m.abortController.signal.addEventListener('abort', () => {
      begun = registry.waitFor(m.id, { match: 'x', signal: signal as unknown as AbortSignal })
    })
    registry.reset()
    expect(await begun).toMatchObject({ reason: 'exit', status: 'cancelled' })
    expect(listeners.added).toBe(listeners.removed)
  })

  it('resolves every pending wait with exit when the monitor is cancelled or reset', async () => {
    const { registry } = monitors()
    const a = registry.start({ command: 'sleep 30' })
    const b = registry.start({ command: 'sleep 30' })
    const waits = [registry.waitFor(a.id), registry.waitFor(a.id, { quietMs: 60_000 }), registry.waitFor(b.id)]
    registry.cancel(a.id)
    registry.reset()
    const [x, y, z] = await Promise.all(waits)
    expect(x).toMatchObject({ reason: 'exit', status: 'cancelled' })
    expect(y).toMatchObject({ reason: 'exit', status: 'cancelled' })
    expect(z).toMatchObject({ reason: 'exit', status: 'cancelled' })
  })

  it('rejects bad options synchronously, naming the field', () => {
    const { registry } = monitors()
    const m = registry.start({ command: 'sleep 30' })
    const bad: [unknown, ErrorConstructor, RegExp][] = [
      [{ match: 5 }, TypeError, /"options\.match"/],
      [{ quietMs: 0 }, RangeError, /"options\.quietMs"/],
      [{ timeoutMs: 86_400_001 }, RangeError, /"options\.timeoutMs"/],
      [{ timeoutMs: 1.5 }, RangeError, /"options\.timeoutMs"/],
      [{ quietMs: '5' }, TypeError, /"options\.quietMs"/],
      [{ signal: {} }, TypeError, /"options\.signal"/],
      ['x', TypeError, /"options"/],
    ]
    for (const [options, type, message] of bad) {
      expect(() => registry.waitFor(m.id, options as never), JSON.stringify(options)).toThrow(type)
      expect(() => registry.waitFor(m.id, options as never)).toThrow(message)
    }
    expect(() => registry.waitFor(m.id, { match: 'a(b' })).toThrow(SyntaxError)
    expect(() => registry.waitFor(m.id, { match: 'a(b' })).toThrow(/"options\.match".*unclosed group/s)
    expect(() => registry.waitFor('nope')).toThrow(/Monitor "nope" is not registered/)
    expect(() => registry.waitFor(5 as never)).toThrow(TypeError)
  })
})

describe('waitFor on fed entries', () => {
  it('follows emitEvent for match and quiet, and the settle for exit', async () => {
    const { registry } = monitors()
    registry.register(registration({ monitorId: 'fed' }))
    const match = registry.waitFor('fed', { match: 'listening' })
    const exit = registry.waitFor('fed')
    registry.emitEvent('fed', 'compiling')
    registry.emitEvent('fed', 'listening on :3000')
    expect(await match).toMatchObject({ reason: 'match', line: 'listening on :3000' })
    // An event inside the window restarts it: the wait ends no sooner than quietMs after that
    // event. The event is sent 100 ms into a 1000 ms window from this thread (blocked meanwhile,
    // so no timer of ours can run late); the quiet timer cannot fire early, so it ends after the
    // event plus the whole window, measured from the call. `called` is read once the call has
    // returned, so the wait's own start (the native clock, read inside the call) is no later
    // than it whatever the scheduler does: only the whole milliseconds of the native clock's two
    // readings (the start and the event) are left as slack.
    const quiet = registry.waitFor('fed', { quietMs: 1000 })
    const called = performance.now()
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100)
    const sentAt = performance.now() - called
    registry.emitEvent('fed', 'still here')
    const q = await quiet
    expect(q.reason).toBe('quiet')
    expect(sentAt).toBeLessThan(1000)
    expect(q.elapsedMs).toBeGreaterThanOrEqual(sentAt + 1000 - 2)
    registry.complete('fed', 0)
    expect(await exit).toMatchObject({ reason: 'exit', status: 'completed' })
  })
})

describe('settled notifications', () => {
  it('fires once per quiet period with the last line, re-armed by output, and is not an event', async () => {
    const { registry, notes, terminal } = monitors()
    const m = registry.start({
      command: "echo 'building <app>'; sleep 0.6; echo built; sleep 0.6; exit 0",
      settleMs: 200,
      description: 'dev',
    })
    await terminal(m.id)
    const settled = notes.filter((n) => n.meta.type === 'settled')
    expect(settled).toHaveLength(2)
    expect(settled[0].display).toBe('Monitor "dev" output settled: no output for 200 ms.')
    expect(settled[0].model).toBe(
      [
        '<task-notification>',
        `<task-id>${m.id}</task-id>`,
        '<kind>monitor</kind>',
        '<status>running</status>',
        '<event-count>1</event-count>',
        '<summary>Monitor "dev" output settled: no output for 200 ms.</summary>',
        '<result>building &lt;app&gt;</result>',
        '</task-notification>',
      ].join('\n'),
    )
    expect(settled[1].model).toContain('<result>built</result>')
    expect(settled.every((n) => n.meta.status === 'running')).toBe(true)
    expect(notes.map((n) => n.meta.type)).toEqual(['event', 'settled', 'event', 'settled', 'terminal'])
    expect(m.eventCount).toBe(2)
  })

  it('quotes the last line of a flood the throttle only counted, and waits still see their line in it', async () => {
    const { registry, notes, terminal } = monitors({ throttle: { burst: 1, refillMs: 60_000 } })
    const m = registry.start({
      // 20000 plain lines in large writes (counted without being built), a coloured one and a
      // match in the middle, and a plain last line.
      command:
        "sleep 0.2; seq 1 10000 | sed 's/^/noise /'; printf '\\033[32mgreen\\033[0m\\nBUILD OK\\n'; seq 10001 20000 | sed 's/^/noise /'; sleep 0.5; exit 0",
      settleMs: 300,
      description: 'flood',
    })
    const wait = registry.waitFor(m.id, { match: '^BUILD OK$' })
    await terminal(m.id)
    expect(await wait).toMatchObject({ reason: 'match', line: 'BUILD OK' })
    const settled = notes.filter((n) => n.meta.type === 'settled')
    expect(settled).toHaveLength(1)
    expect(settled[0].model).toContain('<result>noise 20000</result>')
    expect(m.droppedLines).toBe(20001)
  })

  it('never fires for a task that printed nothing, and rejects a bad settleMs', async () => {
    const { registry, notes, terminal } = monitors()
    const m = registry.start({ command: 'sleep 0.5', settleMs: 100 })
    await terminal(m.id)
    expect(notes.map((n) => n.meta.type)).toEqual(['terminal'])
    expect(() => registry.start({ command: 'true', settleMs: 99 })).toThrow(RangeError)
    expect(() => registry.start({ command: 'true', settleMs: 3_600_001 })).toThrow(/"options\.settleMs"/)
    expect(() => registry.start({ command: 'true', keepAlive: 1 as never })).toThrow(TypeError)
  })

  it('works for shells, with the output tail as the result', async () => {
    const { notes, run } = shells()
    const h = run("printf 'step 1\\nstep 2\\n'; sleep 0.6; echo done", { settleMs: 200 })
    await h.done
    const settled = notes.filter((n) => n.meta.type === 'settled')
    expect(settled).toHaveLength(1)
    expect(settled[0].meta).toMatchObject({ type: 'settled', status: 'running', shellId: h.shellId })
    expect(settled[0].display).toBe(`Background shell "${h.command}" output settled: no output for 200 ms.`)
    expect(settled[0].model).toContain('<result>step 1\nstep 2</result>')
    expect(settled[0].model).toContain(`<output-file>${h.outputPath}</output-file>`)
    expect(notes.map((n) => n.meta.type)).toEqual(['settled', 'terminal'])
  })
})

describe('who ended a monitor', () => {
  it('records every end with by and via, on the entry and the terminal notification', async () => {
    const { registry, notes, terminal } = monitors()
    const exited = registry.start({ command: 'exit 0' })
    const code = registry.start({ command: 'exit 3' })
    const killed = registry.start({ command: 'kill -KILL $$' })
    const idle = registry.start({ command: 'sleep 30', idleTimeoutMs: 150 })
    const max = registry.start({ command: 'echo a; echo b; echo c; sleep 30', maxEvents: 2 })
    const noCwd = registry.start({ command: 'true', cwd: '/definitely/not/here' })
    const cancelled = registry.start({ command: 'sleep 30' })
    const owned = registry.start({ command: 'sleep 30', ownerAgentId: 'agent-1' })
    const aborted = registry.start({ command: 'sleep 30' })
    registry.cancel(cancelled.id)
    registry.cancelRunningForOwner('agent-1')
    aborted.abortController.abort()
    for (const m of [exited, code, killed, idle, max, noCwd, cancelled, aborted]) await terminal(m.id)
    expect(exited.end).toEqual({ reason: 'exited', by: 'process', exitCode: 0 })
    expect(code.end).toEqual({ reason: 'exited', by: 'process', exitCode: 3 })
    expect(killed.end).toEqual({ reason: 'signaled', by: 'process', signal: 'SIGKILL' })
    expect(idle.end).toEqual({ reason: 'idle-timeout', by: 'limit' })
    expect(max.end).toEqual({ reason: 'max-events', by: 'limit' })
    expect(noCwd.end).toMatchObject({ reason: 'spawn-failed', by: 'process', detail: expect.stringMatching(/No such file/) })
    expect(cancelled.end).toEqual({ reason: 'cancelled', by: 'caller', via: 'cancel' })
    expect(owned.end).toEqual({ reason: 'cancelled', by: 'caller', via: 'owner' })
    expect(aborted.end).toEqual({ reason: 'cancelled', by: 'caller', via: 'signal' })
    const last = registry.start({ command: 'sleep 30' })
    const gone = registry.start({ command: 'sleep 30' })
    registry.abortAll()
    expect(last.end).toEqual({ reason: 'cancelled', by: 'caller', via: 'abortAll' })
    const terminals = notes.filter((n) => n.meta.type === 'terminal')
    for (const n of terminals) {
      const entry = registry.get(n.meta.monitorId)
      expect(n.meta.end, n.display).toEqual(entry?.end)
    }
    expect(notes.filter((n) => n.meta.type === 'event').every((n) => n.meta.end === undefined)).toBe(true)
    // reset settles nothing, but what it removed says so.
    const r = monitors()
    const live = r.registry.start({ command: 'sleep 30' })
    r.registry.reset()
    expect(live.end).toEqual({ reason: 'cancelled', by: 'caller', via: 'reset' })
    expect(gone.end).toEqual({ reason: 'cancelled', by: 'caller', via: 'abortAll' })
  })
})

describe('who ended a shell', () => {
  it('in the entry, done, the terminal notification and the sidecar', async () => {
    const { registry, notes, run } = shells()
    const ok = run('exit 0')
    const bad = run('exit 4')
    const sig = run('kill -TERM $$')
    const cancelled = run('sleep 30')
    const requested = run('sleep 30')
    const controller = new AbortController()
    const signalled = run('sleep 30', { signal: controller.signal })
    const spawnFailed = executeBackground({ command: 'true', cwd: '/definitely/not/here', outputDir: mkdtempSync(join(tmpdir(), 'ts-')), registry })
    registry.cancel(cancelled.shellId, Date.now())
    registry.requestCancel(requested.shellId)
    controller.abort()
    const results = await Promise.all([ok, bad, sig, cancelled, requested, signalled, spawnFailed].map((h) => h.done))
    expect(results.map((r) => r.end)).toEqual([
      { reason: 'exited', by: 'process', exitCode: 0 },
      { reason: 'exited', by: 'process', exitCode: 4 },
      { reason: 'signaled', by: 'process', signal: 'SIGTERM' },
      { reason: 'cancelled', by: 'caller', via: 'cancel' },
      { reason: 'cancelled', by: 'caller', via: 'cancel' },
      { reason: 'cancelled', by: 'caller', via: 'signal' },
      { reason: 'spawn-failed', by: 'process', detail: expect.stringMatching(/No such file/) },
    ])
    for (const [h, result] of [ok, bad, sig, cancelled, requested, signalled].map((h, i) => [h, results[i]] as const)) {
      expect(registry.get(h.shellId)?.end).toEqual(result.end)
      expect(JSON.parse(readFileSync(h.statusPath, 'utf8')).end).toEqual(result.end)
    }
    const terminal = notes.filter((n) => n.meta.type === 'terminal')
    expect(terminal.length).toBeGreaterThanOrEqual(6)
    for (const n of terminal) expect(n.meta.end).toEqual(registry.get(n.meta.shellId)?.end)
    const last = run('sleep 30')
    registry.abortAll()
    expect((await last.done).end).toEqual({ reason: 'cancelled', by: 'caller', via: 'abortAll' })
  })

  it('an output file that cannot be opened is an io-error; a bad settleMs is refused before anything runs', async () => {
    const { registry, run, outputDir } = shells()
    mkdirSync(join(outputDir, 'shell-bg_dir00000.output'))
    const h = run('echo never', { shellId: 'bg_dir00000' })
    const result = await h.done
    expect(result.end).toMatchObject({ reason: 'io-error', by: 'process', detail: expect.stringContaining('Cannot open output file') })
    expect(registry.get(h.shellId)?.end).toEqual(result.end)
    expect(() => run('true', { settleMs: 50 })).toThrow(RangeError)
    expect(() => run('true', { settleMs: 'x' })).toThrow(/"options\.settleMs"/)
  })
})

describe('waitFor on shells', () => {
  it('matches output lines in Rust, resolves quiet, timeout and exit', async () => {
    const { registry, run } = shells()
    const server = run("echo booting; sleep 0.2; echo '  Local:   http://localhost:5173/'; sleep 30")
    const m = await registry.waitFor(server.shellId, { match: 'Local: +(http://\\S+)', timeoutMs: 10_000 })
    expect(m).toMatchObject({ reason: 'match', line: 'Local:   http://localhost:5173/', status: 'running' })
    expect(await registry.waitFor(server.shellId, { quietMs: 200 })).toMatchObject({ reason: 'quiet' })
    expect(await registry.waitFor(server.shellId, { match: 'x', timeoutMs: 100 })).toMatchObject({ reason: 'timeout' })
    const exit = registry.waitFor(server.shellId)
    registry.cancel(server.shellId, Date.now())
    expect(await exit).toMatchObject({ reason: 'exit', status: 'cancelled' })
    const quick = run('exit 2')
    const r = await registry.waitFor(quick.shellId)
    expect(r).toMatchObject({ reason: 'exit', status: 'failed' })
    expect(() => registry.waitFor('nope')).toThrow(/Background shell "nope" is not registered/)
    expect(() => registry.waitFor(quick.shellId, { match: '[' })).toThrow(SyntaxError)
  })

  it('for shells registered from JavaScript: exit on settle, the clock otherwise', async () => {
    const registry = new BackgroundShellRegistry()
    registry.register({
      shellId: 'js-1',
      command: 'npm test',
      cwd: '/tmp',
      status: 'running',
      startTime: Date.now(),
      outputPath: join(mkdtempSync(join(tmpdir(), 'ts-')), 'out'),
      abortController: new AbortController(),
    })
    expect(await registry.waitFor('js-1', { timeoutMs: 50 })).toMatchObject({ reason: 'timeout' })
    const exit = registry.waitFor('js-1', { match: 'x' })
    registry.complete('js-1', 0, Date.now())
    expect(await exit).toMatchObject({ reason: 'exit', status: 'completed' })
  })
})

describe('keeping Node alive (API.md §6.6)', () => {
  const fixture = join(__dirname, 'fixtures', 'keep-alive-rules.js')
  const runFixture = (mode: string) => {
    const r = spawnSync(process.execPath, [fixture, mode], { encoding: 'utf8', timeout: 20_000 })
    return r.stdout.trim().split('\n').filter(Boolean)
  }

  it('a monitor does not hold Node by default', () => {
    expect(runFixture('monitor-default')).toEqual(['started'])
  })
  it('a keepAlive monitor holds Node until it ends', () => {
    expect(runFixture('monitor-keepalive')).toEqual(['started', 'terminal completed'])
  })
  it('a pending wait holds Node until it resolves', () => {
    expect(runFixture('wait')).toEqual(['started', 'wait quiet'])
  })
  it('a background shell holds Node until done, unless unref()', () => {
    expect(runFixture('shell')).toEqual(['started', 'done completed'])
    expect(runFixture('shell-unref')).toEqual(['started'])
  })
  it('host exit is recorded in a running shell\'s sidecar', () => {
    const [statusPath] = runFixture('host-exit')
    const sidecar = JSON.parse(readFileSync(statusPath, 'utf8'))
    expect(sidecar).toMatchObject({ status: 'cancelled', end: { reason: 'host-exit', by: 'host' } })
  })
})
