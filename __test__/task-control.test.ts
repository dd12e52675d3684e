// Task control (API.md §6.8): `limits` on a task's whole tree, `timeoutMs`, a wall-clock
// deadline for monitors and background shells, ports, `onOutputCap` and `yieldMs`. Real process trees, including a child that ignores SIGTERM; every pid the tree wrote
// down is checked dead afterwards.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import { BackgroundShellRegistry, MonitorRegistry, executeBackground, type MonitorNotificationMeta } from '../index.js'
import { isAlive, viaScript, waitFor } from './support/process'

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-control-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let n = 0
const pidFile = () => join(scratch, `pids-${++n}`)
/** A tree: bash ignoring SIGTERM, two sleeps in the background (one ignoring SIGTERM too), their pids written down. */
const tree = (file: string) => `trap '' TERM; (trap '' TERM; exec sleep 60) & echo $! >> ${file}; sleep 60 & echo $! >> ${file}; echo $$ >> ${file}; wait`
const pidsIn = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map(Number)

const monitors: MonitorRegistry[] = []
afterEach(() => {
  for (const m of monitors.splice(0)) m.abortAll({ notify: false })
})

const MIB = 1 << 20
/** A Node that allocates 8 MiB every 10 ms, and keeps it. */
const allocator = `node -e "const a = []; setInterval(() => a.push(Buffer.alloc(8 << 20, 1)), 10)"`

describe('limits', () => {
  it('a monitor past memoryBytes fails with end.reason limit (memory); the host and other tasks are untouched', async () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const seen: Array<{ model: string; meta: MonitorNotificationMeta }> = []
    registry.setNotificationCallback((_display, model, meta) => seen.push({ model, meta }))
    const bystander = registry.start({ command: 'sleep 30' })
    const entry = registry.start({ command: allocator, limits: { memoryBytes: 64 * MIB } })
    await waitFor(() => entry.status !== 'running', 20_000, 'the memory limit')
    const detail = `Memory limit of ${64 * MIB} bytes reached`
    expect(entry).toMatchObject({ status: 'failed', error: detail })
    expect(entry.end).toEqual({ reason: 'limit', by: 'limit', limit: 'memory', detail })
    await waitFor(() => seen.some((s) => s.meta.monitorId === entry.id && s.meta.type === 'terminal'), 10_000, 'the terminal notification')
    const terminal = seen.find((s) => s.meta.monitorId === entry.id && s.meta.type === 'terminal')!
    expect(terminal.meta.end).toEqual(entry.end)
    expect(terminal.model).toContain(`<result>${detail}</result>`)
    const usage = entry.usage!
    expect(usage.peakMemoryBytes).toBeGreaterThan(8 * MIB)
    expect(usage.peakMemoryBytes).toBeLessThanOrEqual(64 * MIB)
    expect(usage.cpuMs).toBeGreaterThan(0)
    expect(Object.keys(entry)).not.toContain('usage')
    expect(bystander.status).toBe('running')
    expect(bystander.usage).toBeUndefined()
  })

  it('a background shell past memoryBytes resolves failed with end.limit memory, and its usage stays readable', async () => {
    const registry = new BackgroundShellRegistry()
    const handle = executeBackground({ command: allocator, cwd: scratch, outputDir: join(scratch, 'out'), registry, limits: { memoryBytes: 48 * MIB } })
    const result = await handle.done
    expect(result.status).toBe('failed')
    expect(result.error).toBe(`memory limit of ${48 * MIB} bytes reached`)
    expect(result.end).toEqual({ reason: 'limit', by: 'limit', limit: 'memory', detail: `Memory limit of ${48 * MIB} bytes reached` })
    const usage = registry.get(handle.shellId)!.usage!
    expect(usage.peakMemoryBytes).toBeLessThanOrEqual(48 * MIB)
    expect(usage.cpuMs).toBeGreaterThan(0)
  })

  it('a fork bomb under maxProcesses stays within it and ends with its task', async () => {
    const registry = new BackgroundShellRegistry()
    const tagFile = join(scratch, 'bomb-tag')
    const handle = executeBackground({ command: `echo $TASKSTREAM_TASK_ID > ${tagFile}; bomb() { bomb | bomb & }; bomb; wait`, cwd: scratch, outputDir: join(scratch, 'out'), registry, limits: { maxProcesses: 20 } })
    const tagged = () => taskPids(tagFile)
    await waitFor(() => tagged().length >= 10, 20_000, 'the bomb to grow')
    // It keeps trying; the tree never passes the limit.
    for (let i = 0; i < 20; i++) {
      expect(tagged().length).toBeLessThanOrEqual(20)
      await new Promise((r) => setTimeout(r, 25))
    }
    const pids = tagged()
    registry.requestCancel(handle.shellId)
    expect((await handle.done).status).toBe('cancelled')
    await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000, 'the whole bomb to die')
  })

  it('cpuPercent holds a busy loop to its share of one core', async () => {
    const registry = new BackgroundShellRegistry()
    const started = Date.now()
    const handle = executeBackground({ command: "timeout 2 bash -c 'while :; do :; done'; true", cwd: scratch, outputDir: join(scratch, 'out'), registry, limits: { cpuPercent: 20 } })
    expect((await handle.done).status).toBe('completed')
    const wallMs = Date.now() - started
    const { cpuMs } = registry.get(handle.shellId)!.usage!
    // The kernel's quota is a ceiling (20 %, 25 % with the periods at the edges); load only lowers it.
    expect(cpuMs).toBeGreaterThan(0)
    expect(cpuMs! * 4).toBeLessThanOrEqual(wallMs)
  })

  it('bad values are a TypeError or RangeError naming the field, and nothing starts', () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const shells = new BackgroundShellRegistry()
    const marker = join(scratch, 'limits-started')
    const command = `touch ${marker}`
    const bad: Array<[unknown, typeof TypeError | typeof RangeError, string]> = [
      ['1GB', TypeError, '"options.limits"'],
      [[1], TypeError, '"options.limits"'],
      [{ memoryBytes: '1' }, TypeError, '"options.limits.memoryBytes"'],
      [{ memoryBytes: 1000 }, RangeError, '"options.limits.memoryBytes"'],
      [{ memoryBytes: 2 * MIB + 0.5 }, RangeError, '"options.limits.memoryBytes"'],
      [{ cpuPercent: 0 }, RangeError, '"options.limits.cpuPercent"'],
      [{ cpuPercent: 10_001 }, RangeError, '"options.limits.cpuPercent"'],
      [{ maxProcesses: 0 }, RangeError, '"options.limits.maxProcesses"'],
      [{ maxProcesses: true }, TypeError, '"options.limits.maxProcesses"'],
    ]
    for (const [limits, error, field] of bad) {
      expect(() => registry.start({ command, limits } as never)).toThrow(error)
      expect(() => registry.start({ command, limits } as never)).toThrow(field)
      expect(() => executeBackground({ command, cwd: scratch, outputDir: join(scratch, 'out'), registry: shells, limits } as never)).toThrow(field)
    }
    const persist = { stateDir: join(scratch, 'state') }
    expect(() => registry.start({ command, limits: { maxProcesses: 5 }, persist })).toThrow(/"options\.limits" option cannot be used with "options\.persist"/)
    expect(registry.getAll()).toEqual([])
    expect(shells.getAll()).toEqual([])
    expect(() => readFileSync(marker)).toThrow()
  })

  it('an empty limits object is no limit: no usage', async () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const entry = registry.start({ command: 'echo hi', limits: {} })
    await waitFor(() => entry.status !== 'running', 10_000, 'the exit')
    expect(entry.status).toBe('completed')
    expect(entry.usage).toBeUndefined()
  })

  it('where no cgroup can hold them, start() throws an Error saying why and nothing starts', () => {
    const marker = join(scratch, 'no-cgroup-started')
    const script = `
      const { MonitorRegistry, BackgroundShellRegistry, executeBackground } = require(${JSON.stringify(join(__dirname, '..', 'index.js'))})
      const out = []
      const registry = new MonitorRegistry()
      try { registry.start({ command: 'touch ${marker}', limits: { memoryBytes: ${64 * MIB} } }); out.push('started') } catch (e) { out.push(e.constructor.name + ': ' + e.message) }
      const shells = new BackgroundShellRegistry()
      try { executeBackground({ command: 'touch ${marker}', cwd: ${JSON.stringify(scratch)}, outputDir: ${JSON.stringify(scratch)}, registry: shells, limits: { maxProcesses: 5 } }); out.push('started') } catch (e) { out.push(e.constructor.name + ': ' + e.message) }
      out.push(registry.getAll().length + shells.getAll().length)
      console.log(JSON.stringify(out))`
    const child = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, TASKSTREAM_CGROUP: '0' }, encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' })
    expect(child.status, child.stderr).toBe(0)
    const [monitor, shell, registered] = JSON.parse(child.stdout)
    expect(monitor).toMatch(/^Error: limits cannot be enforced on this host: there is no writable cgroup v2 directory .*TASKSTREAM_CGROUP=0/)
    expect(shell).toMatch(/^Error: limits cannot be enforced on this host/)
    expect(registered).toBe(0)
    expect(() => readFileSync(marker)).toThrow()
  })
})

/** The live processes whose environment carries the task tag written in `tagFile`. */
function taskPids(tagFile: string): number[] {
  let tag: string
  try {
    tag = `TASKSTREAM_TASK_ID=${readFileSync(tagFile, 'utf8').trim()}`
  } catch {
    return []
  }
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(tag) && isAlive(Number(name))) pids.push(Number(name))
    } catch {
      // gone, or not ours to read
    }
  }
  return pids
}

describe('restart', () => {
  /** A command that counts its runs in `dir`/count, says which run it is, writes its pid, and sleeps. */
  const counting = (dir: string) =>
    `n=$(( $(cat ${dir}/count 2>/dev/null || echo 0) + 1 )); echo $n > ${dir}/count; echo $$ > ${dir}/pid-$n; echo "run $n"; exec sleep 30`

  it('a running monitor: the old run is cancelled with end.reason restarted, the new one keeps the id, the options and the counters', async () => {
    const registry = new MonitorRegistry({ throttle: false })
    monitors.push(registry)
    const seen: Array<{ display: string; model: string; meta: MonitorNotificationMeta }> = []
    registry.setNotificationCallback((display, model, meta) => seen.push({ display, model, meta }))
    const dir = mkdtempSync(join(scratch, 'restart-'))
    const first = registry.start({ command: counting(dir), description: 'watcher', env: { RUN_TAG: 'kept' }, maxEvents: 50 })
    await waitFor(() => seen.some((s) => s.display.endsWith('run 1')), 10_000, 'run 1')
    const oldPid = Number(readFileSync(join(dir, 'pid-1'), 'utf8'))
    const oldController = first.abortController

    const second = registry.restart(first.id)
    expect(second.id).toBe(first.id)
    expect(second).not.toBe(first)
    expect(second.status).toBe('running')
    expect(first.status).toBe('cancelled')
    expect(first.end).toEqual({ reason: 'restarted', by: 'caller', via: 'restart' })
    const terminal = seen.find((s) => s.meta.type === 'terminal')!
    expect(terminal.meta).toMatchObject({ monitorId: first.id, status: 'cancelled', end: { reason: 'restarted', by: 'caller', via: 'restart' } })
    expect(registry.get(first.id)).toBe(second)
    expect(registry.getAll()).toHaveLength(1)
    // No survivor of the old run.
    await waitFor(() => !isAlive(oldPid), 10_000, 'the old run to die')

    await waitFor(() => seen.some((s) => s.display.endsWith('run 2')), 10_000, 'run 2')
    // The same options: description, environment, maxEvents; the counters go on.
    expect(second.description).toBe('watcher')
    expect(second.maxEvents).toBe(50)
    expect(second.eventCount).toBe(2)
    expect(seen.filter((s) => s.meta.type === 'event').map((s) => s.display)).toEqual(['Monitor "watcher" event #1: run 1', 'Monitor "watcher" event #2: run 2'])
    // The old run's controller stops nothing any more.
    oldController.abort()
    expect(second.status).toBe('running')
    registry.cancel(second.id)
    expect(second.status).toBe('cancelled')
    expect(second.end?.reason).toBe('cancelled')
  })

  it('an ended monitor runs again; unknown, fed and persisted ids are an Error saying why', async () => {
    const registry = new MonitorRegistry({ throttle: false })
    monitors.push(registry)
    const dir = mkdtempSync(join(scratch, 'restart-'))
    const once = registry.start({ command: `echo x >> ${dir}/runs` })
    await waitFor(() => once.status !== 'running', 10_000, 'the first run')
    const again = registry.restart(once.id)
    await waitFor(() => again.status !== 'running', 10_000, 'the second run')
    expect(again).toMatchObject({ id: once.id, status: 'completed' })
    expect(once.end?.reason).toBe('exited')
    expect(readFileSync(join(dir, 'runs'), 'utf8')).toBe('x\nx\n')

    expect(() => registry.restart('mon_nope')).toThrow('Monitor "mon_nope" cannot be restarted: no such monitor')
    registry.register({ monitorId: 'fed', command: 'tail -f log', description: 'fed', status: 'running', startTime: 1, lastEventTime: 1, eventCount: 0, maxEvents: 10, idleTimeoutMs: 1000, droppedLines: 0, outputFile: '', abortController: new AbortController() } as never)
    expect(() => registry.restart('fed')).toThrow('Monitor "fed" cannot be restarted: only a monitor start() began, and not persisted, can be restarted')
    expect(registry.get('fed')?.status).toBe('running')
    expect(() => registry.restart(42 as never)).toThrow(TypeError)
  })

  it('a running background shell: cancelled with end.reason restarted, then the same command under the same id, its file continued after a marker', async () => {
    const registry = new BackgroundShellRegistry()
    const notes: Array<{ model: string; meta: { shellId: string; status: string; end?: unknown } }> = []
    registry.setNotificationCallback((_display, model, meta) => notes.push({ model, meta }))
    const dir = mkdtempSync(join(scratch, 'restart-'))
    const outputDir = join(scratch, 'restart-out')
    const first = executeBackground({ command: counting(dir), cwd: dir, outputDir, registry, env: { RUN_TAG: 'kept' }, maxOutputBytes: 1000 })
    await waitFor(() => readFileSync(first.outputPath, 'utf8').includes('run 1'), 10_000, 'run 1')
    const oldPid = Number(readFileSync(join(dir, 'pid-1'), 'utf8'))
    const oldEntry = registry.get(first.shellId)!

    const restarting = registry.restart(first.shellId)
    expect(restarting).toBeInstanceOf(Promise)
    const second = await restarting
    const old = await first.done
    expect(old).toMatchObject({ status: 'cancelled', end: { reason: 'restarted', by: 'caller', via: 'restart' } })
    expect(oldEntry.status).toBe('cancelled')
    expect(notes.find((n) => n.meta.shellId === first.shellId)?.meta).toMatchObject({ status: 'cancelled', end: { reason: 'restarted', via: 'restart' } })
    // No survivor of the old run.
    await waitFor(() => !isAlive(oldPid), 10_000, 'the old run to die')

    expect(second.shellId).toBe(first.shellId)
    expect(second.outputPath).toBe(first.outputPath)
    expect(second.done).not.toBe(first.done)
    const entry = registry.get(first.shellId)!
    expect(entry).not.toBe(oldEntry)
    expect(entry.status).toBe('running')
    expect(registry.getAll()).toHaveLength(1)
    await waitFor(() => readFileSync(first.outputPath, 'utf8').includes('run 2'), 10_000, 'run 2')
    const text = readFileSync(first.outputPath, 'utf8')
    expect(text).toMatch(/^run 1\n\[taskstream: restarted at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\]\nrun 2\n$/)

    registry.cancel(first.shellId, Date.now())
    const result = await second.done
    expect(result.status).toBe('cancelled')
    expect(result.end?.reason).toBe('cancelled')
    // The counters go on: both runs' output, the marker not counted.
    expect(result.bytesWritten).toBe('run 1\nrun 2\n'.length)
    expect(result.bytesRead).toBe(old.bytesRead + 'run 2\n'.length)
  })

  it("a restarted shell keeps the caller's signal: its abort stops the new run, and then restart() is refused", async () => {
    const registry = new BackgroundShellRegistry()
    const dir = mkdtempSync(join(scratch, 'restart-'))
    const controller = new AbortController()
    const first = executeBackground({ command: 'sleep 30', cwd: dir, outputDir: join(scratch, 'restart-out'), registry, signal: controller.signal })
    const second = await registry.restart(first.shellId)
    expect((await first.done).end?.reason).toBe('restarted')
    expect(registry.get(first.shellId)?.status).toBe('running')
    controller.abort()
    const result = await second.done
    expect(result).toMatchObject({ status: 'cancelled', end: { reason: 'cancelled', via: 'signal' } })
    await waitFor(() => !isAlive(second.pid!), 10_000, 'the new run to die')
    expect(() => registry.restart(first.shellId)).toThrow(`Background shell "${first.shellId}" cannot be restarted: its signal was aborted`)
  })

  it('a shell restarted after it ended runs again and its maxOutputBytes counts both runs; bad ids are an Error saying why', async () => {
    const registry = new BackgroundShellRegistry()
    const dir = mkdtempSync(join(scratch, 'restart-'))
    const outputDir = join(scratch, 'restart-out')
    const once = executeBackground({ command: 'printf "0123456789\\n"', cwd: dir, outputDir, registry, maxOutputBytes: 15 })
    expect((await once.done).status).toBe('completed')
    const again = await registry.restart(once.shellId)
    const result = await again.done
    expect(result).toMatchObject({ status: 'completed', bytesRead: 22, bytesWritten: 15, bytesNotWritten: 7 })
    const text = readFileSync(once.outputPath, 'utf8')
    expect(text.startsWith('0123456789\n[taskstream: restarted at ')).toBe(true)
    expect(text).toMatch(/\]\n0123\n\[taskstream: output limit of 15 bytes reached; further output is counted but not written\]\n$/)

    expect(() => registry.restart('bg_nope')).toThrow('Background shell "bg_nope" cannot be restarted: no such shell')
    registry.register({ shellId: 'fed', command: 'x', cwd: dir, status: 'running', startTime: 1, outputPath: join(dir, 'x'), abortController: new AbortController() } as never)
    expect(() => registry.restart('fed')).toThrow('Background shell "fed" cannot be restarted: only a shell executeBackground() started, and not persisted, can be restarted')
    expect(registry.get('fed')?.status).toBe('running')
    expect(() => registry.restart(42 as never)).toThrow(TypeError)
    // A restart while one is under way is refused; a reset() before the old run ends rejects it.
    const sleeper = executeBackground({ command: `trap '' TERM; sleep 30`, cwd: dir, outputDir, registry })
    const pending = registry.restart(sleeper.shellId)
    expect(() => registry.restart(sleeper.shellId)).toThrow('a restart of it is already under way')
    registry.reset()
    await expect(pending).rejects.toThrow(`Background shell "${sleeper.shellId}" cannot be restarted: it left the registry before its run ended`)
    await sleeper.done
  })
})

describe('timeoutMs', () => {
  it('a monitor past its deadline is stopped as a cancel stops it, and fails with end.reason timeout', async () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const seen: Array<{ model: string; meta: MonitorNotificationMeta }> = []
    registry.setNotificationCallback((_display, model, meta) => seen.push({ model, meta }))
    const file = pidFile()
    const entry = registry.start({ command: viaScript(tree(file)), timeoutMs: 400 })
    await waitFor(() => entry.status !== 'running', 20_000, 'the deadline')
    expect(entry.status).toBe('failed')
    expect(entry.error).toBe('Timed out after 400 ms')
    expect(entry.end).toEqual({ reason: 'timeout', by: 'limit', detail: 'Timed out after 400 ms' })
    await waitFor(() => seen.some((s) => s.meta.type === 'terminal'), 10_000, 'the terminal notification')
    const terminal = seen.find((s) => s.meta.type === 'terminal')!
    expect(terminal.meta.end).toEqual(entry.end)
    expect(terminal.model).toContain('<status>failed</status>')
    expect(terminal.model).toContain('<result>Timed out after 400 ms</result>')
    const pids = pidsIn(file)
    expect(pids).toHaveLength(3)
    await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000, 'the whole tree to die')
  })

  it('a monitor that ends first is not touched by its deadline', async () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const entry = registry.start({ command: 'echo done', timeoutMs: 60_000 })
    await waitFor(() => entry.status !== 'running', 10_000, 'the exit')
    expect(entry.status).toBe('completed')
    expect(entry.end?.reason).toBe('exited')
  })

  it('a background shell past its deadline is stopped and done resolves failed with end.reason timeout', async () => {
    const registry = new BackgroundShellRegistry()
    const file = pidFile()
    const handle = executeBackground({ command: tree(file), cwd: scratch, outputDir: join(scratch, 'out'), registry, timeoutMs: 400 })
    const result = await handle.done
    expect(result.status).toBe('failed')
    expect(result.error).toBe('timed out after 400 ms')
    expect(result.end).toEqual({ reason: 'timeout', by: 'limit', detail: 'Timed out after 400 ms' })
    expect(registry.get(handle.shellId)).toMatchObject({ status: 'failed', error: 'timed out after 400 ms' })
    const pids = pidsIn(file)
    expect(pids).toHaveLength(3)
    await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000, 'the whole tree to die')
  })

  it('bad values are a TypeError or RangeError naming the field, and nothing starts', () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const shells = new BackgroundShellRegistry()
    const marker = join(scratch, 'started')
    const command = `touch ${marker}`
    for (const [timeoutMs, error] of [
      [0, RangeError],
      [-1, RangeError],
      [1.5, RangeError],
      [2 ** 31, RangeError],
      ['100', TypeError],
    ] as const) {
      expect(() => registry.start({ command, timeoutMs } as never)).toThrow(error)
      expect(() => registry.start({ command, timeoutMs } as never)).toThrow('"options.timeoutMs"')
      expect(() => executeBackground({ command, cwd: scratch, outputDir: join(scratch, 'out'), registry: shells, timeoutMs } as never)).toThrow(error)
    }
    const persist = { stateDir: join(scratch, 'state') }
    expect(() => registry.start({ command, timeoutMs: 100, persist })).toThrow(/"options\.timeoutMs" option cannot be used with "options\.persist"/)
    expect(registry.getAll()).toEqual([])
    expect(shells.getAll()).toEqual([])
    expect(() => readFileSync(marker)).toThrow()
  })
})

describe('onOutputCap', () => {
  it("'stop' ends a runaway shell at maxOutputBytes with end.reason limit, end.limit output", async () => {
    const registry = new BackgroundShellRegistry()
    const handle = executeBackground({ command: "yes 'a line of output'", cwd: scratch, outputDir: join(scratch, 'out'), registry, maxOutputBytes: 10_000, onOutputCap: 'stop' })
    const result = await handle.done
    expect(result.status).toBe('failed')
    expect(result.error).toBe('output limit of 10000 bytes reached')
    expect(result.end).toEqual({ reason: 'limit', by: 'limit', limit: 'output', detail: 'Output limit of 10000 bytes reached' })
    expect(result.bytesWritten).toBe(10_000)
    expect(readFileSync(handle.outputPath, 'utf8').length).toBeGreaterThanOrEqual(10_000)
  })

  it("'truncate' (the default) keeps the task running past the cap", async () => {
    const registry = new BackgroundShellRegistry()
    const handle = executeBackground({ command: "head -c 50000 /dev/zero | tr '\\0' x; echo; echo done", cwd: scratch, outputDir: join(scratch, 'out'), registry, maxOutputBytes: 1000, onOutputCap: 'truncate' })
    const result = await handle.done
    expect(result).toMatchObject({ status: 'completed', exitCode: 0, bytesWritten: 1000 })
    expect(result.end.reason).toBe('exited')
  })

  it('bad values are a TypeError naming the field, and nothing starts', () => {
    const shells = new BackgroundShellRegistry()
    const marker = join(scratch, 'cap-started')
    const options = { command: `touch ${marker}`, cwd: scratch, outputDir: join(scratch, 'out'), registry: shells }
    expect(() => executeBackground({ ...options, onOutputCap: 'kill' } as never)).toThrow(TypeError)
    expect(() => executeBackground({ ...options, onOutputCap: 'kill' } as never)).toThrow(`The "options.onOutputCap" property must be 'truncate' or 'stop'. Received 'kill'`)
    expect(() => executeBackground({ ...options, onOutputCap: 1 } as never)).toThrow('"options.onOutputCap"')
    expect(() => executeBackground({ ...options, onOutputCap: 'stop', persist: { stateDir: join(scratch, 'state') } })).toThrow(TypeError)
    expect(shells.getAll()).toEqual([])
    expect(() => readFileSync(marker)).toThrow()
  })
})

/** A free TCP port on 127.0.0.1 (bound, read, released). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A grandchild (a node process the command's subshell starts) listening on `port` (0: any) after `delayMs`. */
const listener = (port: number, delayMs: number) =>
  `(sleep ${delayMs / 1000}; exec ${JSON.stringify(process.execPath)} -e "require('net').createServer().listen(${port}, '127.0.0.1'); setInterval(() => {}, 1000)") & sleep 60`

describe.skipIf(process.platform !== 'linux')('ports', () => {
  it("waitFor({ port: true }) resolves when a grandchild listens, and entry.ports lists the port", async () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const entry = registry.start({ command: viaScript(listener(0, 0.3)) })
    expect(entry.ports).toEqual([])
    const result = await registry.waitFor(entry.id, { port: true, timeoutMs: 20_000 })
    expect(result).toMatchObject({ reason: 'port', status: 'running' })
    expect(result.port).toBeGreaterThan(0)
    expect(entry.ports).toEqual([result.port])
    // Not enumerable: copying an entry scans nothing.
    expect(Object.keys(entry)).not.toContain('ports')
    registry.cancel(entry.id)
    await waitFor(() => entry.status !== 'running', 10_000, 'the cancel')
    expect(entry.ports).toBeUndefined()
  })

  it('waitFor({ port: <n> }) waits for that port on a background shell', async () => {
    const registry = new BackgroundShellRegistry()
    const port = await freePort()
    const handle = executeBackground({ command: listener(port, 0.2), cwd: scratch, outputDir: join(scratch, 'out'), registry })
    const result = await registry.waitFor(handle.shellId, { port, timeoutMs: 20_000 })
    expect(result).toMatchObject({ reason: 'port', port, status: 'running' })
    expect(registry.get(handle.shellId)!.ports).toEqual([port])
    registry.requestCancel(handle.shellId)
    const done = await handle.done
    expect(done.status).toBe('cancelled')
    expect(registry.get(handle.shellId)!.ports).toBeUndefined()
  })

  it('a task that never listens times out, and bad port values are errors naming the field', async () => {
    const registry = new MonitorRegistry()
    monitors.push(registry)
    const entry = registry.start({ command: 'sleep 30' })
    const result = await registry.waitFor(entry.id, { port: true, timeoutMs: 200 })
    expect(result.reason).toBe('timeout')
    expect(result.port).toBeUndefined()
    for (const [port, error] of [[0, RangeError], [65_536, RangeError], [80.5, RangeError], ['80', TypeError]] as const) {
      expect(() => registry.waitFor(entry.id, { port } as never)).toThrow(error)
      expect(() => registry.waitFor(entry.id, { port } as never)).toThrow('"options.port"')
    }
  })
})

describe('yieldMs', () => {
  it('a command that ends within yieldMs comes back in one call: foreground, done settled, its output tail', async () => {
    const registry = new BackgroundShellRegistry()
    const handle = await executeBackground({ command: 'echo hello; echo world', cwd: scratch, outputDir: join(scratch, 'out'), registry, yieldMs: 20_000 })
    expect(handle.foreground).toBe(true)
    expect(handle.outputTail).toBe('hello\nworld')
    let settled = false
    void handle.done.then(() => (settled = true))
    await Promise.resolve()
    expect(settled).toBe(true)
    expect(await handle.done).toMatchObject({ status: 'completed', exitCode: 0 })
  })

  it('a command that outlives yieldMs is a background shell as without it', async () => {
    const registry = new BackgroundShellRegistry()
    const handle = await executeBackground({ command: 'sleep 30', cwd: scratch, outputDir: join(scratch, 'out'), registry, yieldMs: 200 })
    expect(handle.foreground).toBe(false)
    expect(handle.outputTail).toBeUndefined()
    expect(registry.get(handle.shellId)?.status).toBe('running')
    registry.requestCancel(handle.shellId)
    expect((await handle.done).status).toBe('cancelled')
  })

  it('without yieldMs the handle comes at once, and bad values are RangeErrors naming the field', () => {
    const registry = new BackgroundShellRegistry()
    const options = { command: 'true', cwd: scratch, outputDir: join(scratch, 'out'), registry }
    const handle = executeBackground(options)
    expect(handle).not.toBeInstanceOf(Promise)
    expect(handle.foreground).toBeUndefined()
    for (const yieldMs of [0, 600_001, 1.5]) {
      expect(() => executeBackground({ ...options, yieldMs } as never)).toThrow(RangeError)
      expect(() => executeBackground({ ...options, yieldMs } as never)).toThrow('"options.yieldMs"')
    }
  })
})
