// Tasks stopped from unusual places still lose their processes: a cancel from a
// callback that runs inside start(), complete()/fail() on a native monitor. Every check counts
// processes by pid and allows 2 s.
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import { MonitorRegistry, type MonitorTask } from '../index.js'
import { isAlive, viaScript, waitFor } from './support/process'

const quiet = 'sleep 30' // bash execs it: the entry's pid is the sleep itself

async function expectDead(pid: number | undefined) {
  expect(pid).toBeGreaterThan(1)
  await waitFor(() => !isAlive(pid!), 2000, `pid ${pid} to die`)
}

describe('a native monitor stopped while start() runs its callbacks', () => {
  const cases: Array<[string, (r: MonitorRegistry, e: MonitorTask) => void, string]> = [
    ['cancel() from the register callback', (r, e) => r.cancel(e.id), 'cancelled'],
    ['cancel({ notify: false }) from the register callback', (r, e) => r.cancel(e.id, { notify: false }), 'cancelled'],
    ['abortAll() from the register callback', (r) => r.abortAll(), 'cancelled'],
    ['entry.abortController.abort() from the register callback', (_r, e) => e.abortController.abort(), 'cancelled'],
    ['reset() from the register callback', (r) => r.reset(), 'gone'],
  ]
  it.each(cases)('%s kills the child', async (_name, stop, expected) => {
    const registry = new MonitorRegistry()
    let stopped = false
    registry.setRegisterCallback((entry) => {
      if (stopped) return
      stopped = true
      stop(registry, entry)
    })
    const entry = registry.start({ command: quiet })
    await expectDead(entry.pid)
    if (expected === 'gone') expect(registry.get(entry.id)).toBeFalsy()
    else await waitFor(() => registry.get(entry.id)?.status === expected, 2000, expected)
  })

  it('cancel() from the status-change callback kills the child', async () => {
    const registry = new MonitorRegistry()
    registry.setStatusChangeCallback((entry) => {
      if (entry?.status === 'running') registry.cancel(entry.id)
    })
    const entry = registry.start({ command: quiet })
    await expectDead(entry.pid)
    expect(registry.get(entry.id)?.status).toBe('cancelled')
  })

  it('abortAll() from the status-change callback kills the child', async () => {
    const registry = new MonitorRegistry()
    let once = false
    registry.setStatusChangeCallback(() => {
      if (once) return
      once = true
      registry.abortAll()
    })
    const entry = registry.start({ command: quiet })
    await expectDead(entry.pid)
  })
})

describe('complete() and fail() on a native monitor stop its process', () => {
  it.each([
    ['complete', (r: MonitorRegistry, id: string) => r.complete(id, 0), 'completed'],
    ['fail', (r: MonitorRegistry, id: string) => r.fail(id, 'stopped by the caller'), 'failed'],
  ] as const)('%s()', async (_name, settle, status) => {
    const registry = new MonitorRegistry()
    const notes: string[] = []
    registry.setNotificationCallback((_d, _m, meta) => notes.push(meta.status))
    const entry = registry.start({ command: viaScript('trap "" TERM; sleep 30 & wait') })
    await waitFor(() => entry.pid !== undefined && isAlive(entry.pid), 2000, 'child')
    settle(registry, entry.id)
    expect(registry.get(entry.id)?.status).toBe(status)
    await expectDead(entry.pid)
    // Exactly one terminal notification: the child's death does not settle it again.
    await new Promise((r) => setTimeout(r, 300))
    expect(notes.filter((s) => s !== 'running')).toEqual([status])
  })
})

// A daemon that double-forks, leads its own session and clears its environment keeps no
// parent link, no group and no task tag: only the task's cgroup (Linux) still holds it.
const daemonScript = require('node:path').join(__dirname, 'fixtures', 'env-cleared-daemon.sh')

function daemonPidFile(): string {
  const { mkdtempSync } = require('node:fs') as typeof import('node:fs')
  const { tmpdir } = require('node:os') as typeof import('node:os')
  return require('node:path').join(mkdtempSync(require('node:path').join(tmpdir(), 'taskstream-daemon-')), 'pid')
}

/** The daemon's pid once it wrote it (it was running then: it writes it as it starts). */
async function daemonPid(file: string, { checkAlive = true } = {}): Promise<number> {
  const { existsSync, readFileSync } = await import('node:fs')
  await waitFor(() => existsSync(file), 5000, 'the daemon to write its pid')
  const pid = Number(readFileSync(file, 'utf8').trim())
  if (checkAlive) expect(isAlive(pid)).toBe(true)
  return pid
}

describe('an env-cleared, double-forked daemon dies with its task', () => {
  it('monitor cancel()', async () => {
    const registry = new MonitorRegistry()
    const file = daemonPidFile()
    const entry = registry.start({ command: `bash ${daemonScript} ${file}; sleep 30` })
    const pid = await daemonPid(file)
    registry.cancel(entry.id)
    await expectDead(pid)
    await expectDead(entry.pid)
  })

  it('monitor that ends on its own', async () => {
    const registry = new MonitorRegistry()
    const file = daemonPidFile()
    const entry = registry.start({ command: `bash ${daemonScript} ${file}; until [ -s ${file} ]; do sleep 0.01; done; echo started` })
    const pid = await daemonPid(file, { checkAlive: false })
    await waitFor(() => registry.get(entry.id)?.status === 'completed', 5000, 'completed')
    await expectDead(pid)
  })

  it('background shell cancel()', async () => {
    const { executeBackground, BackgroundShellRegistry } = await import('../index.js')
    const { mkdtempSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const registry = new BackgroundShellRegistry()
    const file = daemonPidFile()
    const handle = executeBackground({
      command: `bash ${daemonScript} ${file}; sleep 30`,
      cwd: '/tmp',
      outputDir: mkdtempSync(require('node:path').join(tmpdir(), 'taskstream-shell-')),
      registry,
    })
    const pid = await daemonPid(file)
    registry.cancel(handle.shellId, Date.now())
    expect((await handle.done).status).toBe('cancelled')
    await expectDead(pid)
  })

  it('background shell that ends on its own', async () => {
    const { executeBackground, BackgroundShellRegistry } = await import('../index.js')
    const { mkdtempSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const file = daemonPidFile()
    const handle = executeBackground({
      command: `bash ${daemonScript} ${file}; until [ -s ${file} ]; do sleep 0.01; done; nohup sleep 30 >/dev/null 2>&1 & echo started`,
      cwd: '/tmp',
      outputDir: mkdtempSync(require('node:path').join(tmpdir(), 'taskstream-shell-')),
      registry: new BackgroundShellRegistry(),
    })
    // The shell ends at once, so the daemon may already be gone when its pid is read.
    const pid = await daemonPid(file, { checkAlive: false })
    expect((await handle.done).status).toBe('completed')
    await expectDead(pid)
  })
})

describe('tasks belong to the Node environment that started them', () => {
  const workerCode = (addon: string, end: string) => `
    const { parentPort } = require('node:worker_threads')
    const { mkdtempSync } = require('node:fs')
    const { tmpdir } = require('node:os')
    const { join } = require('node:path')
    const { MonitorRegistry, executeBackground } = require(${JSON.stringify(addon)})
    const monitors = new MonitorRegistry()
    const monitor = monitors.start({ command: 'sleep 30' })
    const shell = executeBackground({ command: 'sleep 30', cwd: '/tmp', outputDir: mkdtempSync(join(tmpdir(), 'taskstream-worker-')) })
    parentPort.postMessage([monitor.pid, shell.pid])
    ${end}
  `

  it.each([
    ['worker.terminate()', 'setInterval(() => {}, 1000)'],
    ['a Worker that calls process.exit()', "parentPort.on('message', () => process.exit(0))"],
  ])('%s kills the tasks the Worker started', async (_name, end) => {
    const { Worker } = await import('node:worker_threads')
    const worker = new Worker(workerCode(require('node:path').join(__dirname, '..'), end), { eval: true })
    const pids: number[] = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    for (const pid of pids) expect(isAlive(pid)).toBe(true)
    if (end.includes('process.exit')) worker.postMessage('exit')
    else await worker.terminate()
    for (const pid of pids) await expectDead(pid)
  })

  // A registry nothing references stays reachable while its task runs (garbage
  // collection cancels nothing, as for a ChildProcess with listeners), and the
  // task still dies with the host.
  it('an unreferenced MonitorRegistry keeps its running task through garbage collections, and the task dies with Node', async () => {
    const { spawnSync } = require('node:child_process') as typeof import('node:child_process')
    const script = `
      const { MonitorRegistry } = require(${JSON.stringify(require('node:path').join(__dirname, '..'))})
      const { readFileSync } = require('node:fs')
      const alive = (pid) => { try { return readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ')[1][0] !== 'Z' } catch { return false } }
      let pid
      ;(() => { pid = new MonitorRegistry().start({ command: 'sleep 30' }).pid })()
      let rounds = 0
      const check = () => {
        globalThis.gc()
        if (!alive(pid)) { console.log(JSON.stringify({ pid, alive: false, rounds })); process.exit(0) }
        if (++rounds === 50) { console.log(JSON.stringify({ pid, alive: true, rounds })); process.exit(0) }
        setImmediate(check)
      }
      setImmediate(check)
    `
    const run = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 30_000 })
    expect(run.status).toBe(0)
    const result = JSON.parse(run.stdout) as { pid: number; alive: boolean; rounds: number }
    expect(result).toMatchObject({ alive: true, rounds: 50 })
    await expectDead(result.pid)
  })
})

describe('executeBackground never leaves a process it cannot manage', () => {
  const tmp = () => {
    const { mkdtempSync } = require('node:fs') as typeof import('node:fs')
    const { tmpdir } = require('node:os') as typeof import('node:os')
    return mkdtempSync(require('node:path').join(tmpdir(), 'taskstream-exec-'))
  }

  // Each hostile environment makes executeBackground throw; the command would create a marker
  // file if it ever ran.
  const hostile: Array<[string, (run: () => unknown, options: Record<string, unknown>) => unknown]> = [
    ['a throwing AbortController constructor', (run) => {
      const original = globalThis.AbortController
      ;(globalThis as { AbortController: unknown }).AbortController = class {
        constructor() {
          throw new Error('no controllers here')
        }
      }
      try {
        return run()
      } finally {
        globalThis.AbortController = original
      }
    }],
    ['a stubbed setInterval', (run) => {
      const original = globalThis.setInterval
      ;(globalThis as { setInterval: unknown }).setInterval = () => {
        throw new Error('no timers here')
      }
      try {
        return run()
      } finally {
        globalThis.setInterval = original
      }
    }],
    ['a signal whose addEventListener throws', (run, options) => {
      const signal = new AbortController().signal
      signal.addEventListener = () => {
        throw new Error('no listeners here')
      }
      options.signal = signal
      return run()
    }],
  ]
  it.each(hostile)('%s: throws with nothing spawned or registered', async (_name, within) => {
    const { executeBackground, BackgroundShellRegistry } = await import('../index.js')
    const { existsSync } = await import('node:fs')
    const dir = tmp()
    const marker = require('node:path').join(dir, 'ran')
    const registry = new BackgroundShellRegistry()
    const options: Record<string, unknown> = { command: `touch ${marker}; sleep 30`, cwd: dir, outputDir: dir, registry }
    expect(() => within(() => executeBackground(options as never), options)).toThrow(/no (controllers|timers|listeners) here/)
    expect(registry.getAll()).toEqual([])
    await new Promise((r) => setTimeout(r, 300))
    expect(existsSync(marker)).toBe(false)
  })

  const stops: Array<[string, (r: InstanceType<typeof import('../index.js').BackgroundShellRegistry>, id: string, entry: { abortController: AbortController }) => void, string]> = [
    ['cancel()', (r, id) => r.cancel(id, Date.now()), 'cancelled'],
    ['abortAll()', (r) => r.abortAll(), 'cancelled'],
    ['entry.abortController.abort()', (_r, _id, e) => e.abortController.abort(), 'cancelled'],
    ['complete()', (r, id) => r.complete(id, 0, Date.now()), 'completed'],
    ['fail()', (r, id) => r.fail(id, 'stopped', Date.now()), 'failed'],
  ]
  it.each(stops)('%s from the register callback kills the child; done says so', async (_name, stop, status) => {
    const { executeBackground, BackgroundShellRegistry } = await import('../index.js')
    const registry = new BackgroundShellRegistry()
    registry.setRegisterCallback((entry) => stop(registry, entry.id, entry as never))
    const dir = tmp()
    const handle = executeBackground({ command: 'sleep 30', cwd: dir, outputDir: dir, registry })
    await expectDead(handle.pid)
    expect((await handle.done).status).toBe(status)
  })

  it.each([
    ['complete()', (r: InstanceType<typeof import('../index.js').BackgroundShellRegistry>, id: string) => r.complete(id, 0, Date.now()), 'completed'],
    ['fail()', (r: InstanceType<typeof import('../index.js').BackgroundShellRegistry>, id: string) => r.fail(id, 'stopped', Date.now()), 'failed'],
  ] as const)('%s on a running executeBackground shell stops its process', async (_name, settle, status) => {
    const { executeBackground, BackgroundShellRegistry } = await import('../index.js')
    const registry = new BackgroundShellRegistry()
    const dir = tmp()
    const handle = executeBackground({ command: viaScript('trap "" TERM; sleep 30 & wait'), cwd: dir, outputDir: dir, registry })
    await waitFor(() => isAlive(handle.pid!), 2000, 'child')
    settle(registry, handle.shellId)
    await expectDead(handle.pid)
    expect((await handle.done).status).toBe(status)
  })

  it("a shell reset() removed still dies when its entry's controller is aborted, and only it", async () => {
    const { executeBackground, BackgroundShellRegistry } = await import('../index.js')
    const registry = new BackgroundShellRegistry()
    const dir = tmp()
    const handle = executeBackground({ command: 'sleep 30', cwd: dir, outputDir: dir, registry, shellId: 'reused' })
    const entry = registry.get(handle.shellId)!
    await waitFor(() => isAlive(handle.pid!), 2000, 'child')
    registry.reset()
    expect(registry.getAll()).toEqual([])
    expect(isAlive(handle.pid!)).toBe(true)
    // A new shell takes the id while the removed one still runs.
    const next = executeBackground({ command: 'sleep 30', cwd: dir, outputDir: join(dir, 'next'), registry, shellId: 'reused' })
    await waitFor(() => isAlive(next.pid!), 2000, 'the new child')
    entry.abortController.abort()
    await expectDead(handle.pid)
    expect((await handle.done).end).toMatchObject({ reason: 'cancelled', via: 'signal' })
    expect(isAlive(next.pid!)).toBe(true)
    expect(registry.get('reused')?.status).toBe('running')
    registry.get('reused')!.abortController.abort()
    expect((await next.done).status).toBe('cancelled')
  })
})
