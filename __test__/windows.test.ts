// The built addon end to end on Windows: what the Unix suites check with bash,
// /proc and signals, checked with cmd.exe, Job Objects and exit codes (README
// "Platforms", Windows). Runs only on win32: in the CI workflow's Windows jobs,
// and here under Wine through scripts/test-windows.mjs.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import { BackgroundShellRegistry, executeBackground, MonitorRegistry, type MonitorTask } from '../index.js'

const onWindows = process.platform === 'win32'

/** True while `pid` runs: on Windows, `process.kill(pid, 0)` asks for the process's exit code
 * (STILL_ACTIVE), so an exited process whose handle is still open elsewhere counts as gone. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Waits until the registry forgot an ended persisted task's state: only the lease stays. */
const forgotten = (stateDir: string) =>
  waitFor(() => readdirSync(stateDir).every((name) => name === 'lease'), 20_000, `the state in ${stateDir} to be forgotten`)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const size = (file: string) => {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

describe.runIf(onWindows)('Windows end to end', () => {
  const scratch = onWindows ? mkdtempSync(join(tmpdir(), 'taskstream-windows-')) : ''
  afterAll(() => rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }))
  let dirCount = 0
  const freshDir = () => {
    const dir = join(scratch, `d-${++dirCount}`)
    mkdirSync(dir, { recursive: true })
    return dir
  }

  interface Note {
    display: string
    model: string
    meta: { monitorId: string; status: string }
  }
  const registries: MonitorRegistry[] = []
  const shellRegistries: BackgroundShellRegistry[] = []
  afterEach(() => {
    for (const r of registries.splice(0)) r.abortAll({ notify: false })
    for (const r of shellRegistries.splice(0)) r.abortAll()
  })
  function monitors() {
    const registry = new MonitorRegistry({ throttle: false })
    registries.push(registry)
    const notes: Note[] = []
    registry.setNotificationCallback((display, model, meta) => notes.push({ display, model, meta }))
    const events = () => notes.filter((n) => n.meta.status === 'running').map((n) => n.display.replace(/^.*?: /, ''))
    const terminal = () => notes.filter((n) => n.meta.status !== 'running')
    const done = (entry: MonitorTask) =>
      waitFor(() => notes.some((n) => n.meta.monitorId === entry.id && n.meta.status !== 'running'), 20_000, 'terminal notification')
    return { registry, notes, events, terminal, done }
  }
  function shells() {
    const registry = new BackgroundShellRegistry()
    shellRegistries.push(registry)
    return registry
  }

  it('a monitor on cmd output delivers its lines, then one terminal notification', async () => {
    const { registry, events, terminal, done } = monitors()
    const entry = registry.start({ command: 'echo alpha&& echo beta 1>&2&& echo gamma', description: 'win' })
    expect(entry).toMatchObject({ kind: 'monitor', status: 'running' })
    expect(entry.pid).toEqual(expect.any(Number))
    await done(entry)
    expect(events().sort()).toEqual(['alpha', 'beta', 'gamma'])
    expect(terminal()).toHaveLength(1)
    expect(terminal()[0].display).toBe('Monitor "win" completed. (3 events)')
    expect(terminal()[0].model).toContain('<result>Exited with code 0</result>')
    expect(entry).toMatchObject({ status: 'completed', exitCode: 0, eventCount: 3, notified: true })
  })

  it('maps exit codes without signals: 3 is failed with "Exit code 3"', async () => {
    const { registry, terminal, done } = monitors()
    const entry = registry.start({ command: 'echo before&& exit 3' })
    await done(entry)
    expect(entry).toMatchObject({ status: 'failed', error: 'Exit code 3' })
    expect(terminal()[0].model).toContain('<result>Exit code 3</result>')
  })

  it('a background shell writes its output file and its sidecar', async () => {
    const registry = shells()
    const dir = freshDir()
    const ok = executeBackground({ command: 'echo from-shell', cwd: dir, outputDir: dir, registry, shellId: 'ok' })
    const bad = executeBackground({ command: 'echo to-stderr 1>&2&& exit 3', cwd: dir, outputDir: dir, registry, shellId: 'bad' })
    expect(ok.outputPath).toBe(join(dir, 'shell-ok.output'))
    expect(ok.statusPath).toBe(join(dir, 'shell-ok.status'))
    const [okDone, badDone] = await Promise.all([ok.done, bad.done])
    expect(okDone).toMatchObject({ status: 'completed', exitCode: 0 })
    expect(badDone).toMatchObject({ status: 'failed', exitCode: 3 })
    expect(readFileSync(ok.outputPath, 'utf8')).toContain('from-shell')
    expect(readFileSync(bad.outputPath, 'utf8')).toContain('to-stderr')
    const okStatus = JSON.parse(readFileSync(ok.statusPath, 'utf8'))
    const badStatus = JSON.parse(readFileSync(bad.statusPath, 'utf8'))
    expect(okStatus).toMatchObject({ id: 'ok', status: 'completed', exitCode: 0, ownerPid: process.pid })
    expect(badStatus).toMatchObject({ id: 'bad', status: 'failed', error: 'exited with code 3' })
    expect(registry.get('bad')).toMatchObject({ status: 'failed', error: 'exited with code 3' })
  })

  it("a cancel kills the shell's grandchild: its pid is gone and its file stops growing", async () => {
    const registry = shells()
    const dir = freshDir()
    const pidFile = join(dir, 'grandchild.pid')
    const ticks = join(dir, 'ticks.txt')
    // The grandchild: this Node, started by a nested cmd, saying its pid and ticking into a file.
    const script = join(dir, 'grandchild.js')
    writeFileSync(
      script,
      `const fs = require('fs')\nfs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid))\n` +
        `setInterval(() => fs.appendFileSync(${JSON.stringify(ticks)}, 'x'), 100)\n`,
    )
    const controller = new AbortController()
    const shell = executeBackground({
      command: `cmd /d /c ""${process.execPath}" "${script}""`,
      cwd: dir,
      outputDir: dir,
      registry,
      signal: controller.signal,
    })
    await waitFor(() => size(pidFile) > 0 && size(ticks) > 0, 30_000, 'the grandchild to start')
    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(pid).toBeGreaterThan(0)
    expect(pid).not.toBe(shell.pid)
    expect(isRunning(pid)).toBe(true)
    controller.abort()
    const done = await shell.done
    expect(done.status).toBe('cancelled')
    await waitFor(() => !isRunning(pid), 5_000, 'the grandchild to die')
    const after = size(ticks)
    await sleep(1_000)
    expect(size(ticks)).toBe(after)
  })

  it('refuses bad input before anything runs', () => {
    const { registry } = monitors()
    const monitorBad: [unknown, typeof TypeError | typeof RangeError, RegExp][] = [
      [undefined, TypeError, /"options"/],
      [{ command: 42 }, TypeError, /"options.command"/],
      [{ command: 'echo x', maxEvents: 0 }, RangeError, /"options.maxEvents"/],
      [{ command: 'echo x', cwd: 'relative' }, TypeError, /"options.cwd"/],
      [{ command: 'echo x', env: { A: 1 } }, TypeError, /"options.env.A"/],
    ]
    for (const [options, type, message] of monitorBad) {
      const call = () => registry.start(options as Parameters<MonitorRegistry['start']>[0])
      expect(call, JSON.stringify(options)).toThrowError(type)
      expect(call).toThrowError(message)
    }
    expect(registry.getAll()).toEqual([])

    const shellRegistry = shells()
    const dir = freshDir()
    const shellBad: [unknown, typeof TypeError | typeof RangeError, RegExp][] = [
      [{ command: '   ', cwd: dir, outputDir: dir }, TypeError, /"options.command"/],
      [{ command: 'echo x', cwd: 'relative', outputDir: dir }, TypeError, /"options.cwd"/],
      [{ command: 'echo x', cwd: dir, outputDir: dir, maxOutputBytes: 0 }, RangeError, /"options.maxOutputBytes"/],
      [{ command: 'echo x', cwd: dir, outputDir: dir, shellId: 'a\\b' }, RangeError, /"options.shellId"/],
      [{ command: 'echo x', cwd: dir, outputDir: dir, shellId: 'a:b' }, RangeError, /"options.shellId"/],
    ]
    for (const [options, type, message] of shellBad) {
      const call = () => executeBackground({ registry: shellRegistry, ...(options as object) } as Parameters<typeof executeBackground>[0])
      expect(call, JSON.stringify(options)).toThrowError(type)
      expect(call).toThrowError(message)
    }
    expect(shellRegistry.getAll()).toEqual([])
  })

  // Terminal mode is ConPTY inside the task's job. The commands write to and read from the console
  // device CON: Windows gives a program on a pseudo console the console's standard handles, Wine 8
  // leaves them null (src/core/process/windows/tests/conpty.rs says more); CON works on both.
  it('terminal: true runs the command on a pseudo console: screen(), write() answering a prompt, lines', async () => {
    const { registry, events, terminal, done } = monitors()
    const entry = registry.start({
      command: 'echo name?> CON&& set /p name=<CON&& call echo hi %name%> CON',
      description: 'tty',
      terminal: { cols: 80, rows: 24 },
    })
    expect(entry).toMatchObject({ status: 'running' })
    await waitFor(() => registry.screen(entry.id)?.text.includes('name?') ?? false, 30_000, 'the prompt on the screen')
    expect(registry.screen(entry.id)).toMatchObject({ cols: 80, rows: 24 })
    registry.write(entry.id, 'agent\r')
    await done(entry)
    expect(registry.screen(entry.id)?.text).toContain('hi agent')
    // Lines as a person reads them: ANSI stripped, the typed answer echoed by the console.
    expect(events()).toContain('hi agent')
    expect(events()).toContain('name?')
    expect(terminal()).toHaveLength(1)
    expect(entry).toMatchObject({ status: 'completed', exitCode: 0 })
    expect(() => registry.write(entry.id, 'late')).toThrowError(/ended/)
  })

  it('a terminal background shell writes its lines to the output file; a cancel ends its job', async () => {
    const registry = shells()
    const dir = freshDir()
    const controller = new AbortController()
    const shell = executeBackground({
      command: 'echo from-the-console> CON & ping -n 60 127.0.0.1 > NUL',
      signal: controller.signal,
      cwd: dir,
      outputDir: dir,
      registry,
      shellId: 'tty',
      terminal: true,
    })
    await waitFor(() => readFileSync(shell.outputPath, 'utf8').includes('from-the-console'), 30_000, 'the output file')
    expect(registry.screen('tty')).toMatchObject({ cols: 120, rows: 40 })
    expect(registry.screen('tty')?.text).toContain('from-the-console')
    expect(readFileSync(shell.outputPath, 'utf8')).not.toContain('\u001b')
    controller.abort()
    const done = await shell.done
    expect(done.status).toBe('cancelled')
    expect(() => registry.write('tty', 'x')).toThrowError(/ended/)
  })

  // Task control (API.md §6.8) on Windows: the deadline and the output cap end the task's whole
  // job, and yieldMs hands back a quick command in one call (task-control.test.ts checks the same
  // with bash trees on Unix).
  /** A script that starts a grandchild Node (both tick forever) and writes both pids to `pids`. */
  function treeScript(dir: string): { script: string; pids: string } {
    const pids = join(dir, 'tree.pids')
    const script = join(dir, 'tree.js')
    writeFileSync(
      script,
      `const fs = require('fs'), cp = require('child_process')\n` +
        `const child = cp.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })\n` +
        `fs.writeFileSync(${JSON.stringify(pids)}, process.pid + '\\n' + child.pid)\n` +
        `setInterval(() => {}, 1000)\n`,
    )
    return { script, pids }
  }
  const node = (script: string) => `"${process.execPath}" "${script}"`
  const treePids = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map(Number)

  it('timeoutMs: a monitor past its deadline fails with end.reason timeout and its tree is gone', async () => {
    const { registry, terminal, done } = monitors()
    const { script, pids } = treeScript(freshDir())
    const entry = registry.start({ command: node(script), timeoutMs: 6_000 })
    await waitFor(() => size(pids) > 0, 30_000, 'the tree to start')
    const [parent, grandchild] = treePids(pids)
    await done(entry)
    expect(entry).toMatchObject({ status: 'failed', error: 'Timed out after 6000 ms' })
    expect(entry.end).toEqual({ reason: 'timeout', by: 'limit', detail: 'Timed out after 6000 ms' })
    expect(terminal()[0].model).toContain('<result>Timed out after 6000 ms</result>')
    await waitFor(() => !isRunning(parent) && !isRunning(grandchild), 10_000, 'the tree to die')
  })

  it('timeoutMs: a background shell past its deadline resolves failed with end.reason timeout', async () => {
    const registry = shells()
    const dir = freshDir()
    const { script, pids } = treeScript(dir)
    const shell = executeBackground({ command: node(script), cwd: dir, outputDir: dir, registry, timeoutMs: 6_000 })
    await waitFor(() => size(pids) > 0, 30_000, 'the tree to start')
    const [parent, grandchild] = treePids(pids)
    const result = await shell.done
    expect(result).toMatchObject({ status: 'failed', error: 'timed out after 6000 ms' })
    expect(result.end).toEqual({ reason: 'timeout', by: 'limit', detail: 'Timed out after 6000 ms' })
    await waitFor(() => !isRunning(parent) && !isRunning(grandchild), 10_000, 'the tree to die')
  })

  it("onOutputCap 'stop' ends a runaway shell at maxOutputBytes with end.reason limit", async () => {
    const registry = shells()
    const dir = freshDir()
    const script = join(dir, 'flood.js')
    writeFileSync(script, `setInterval(() => process.stdout.write('a line of output\\n'.repeat(100)), 5)\n`)
    const shell = executeBackground({ command: node(script), cwd: dir, outputDir: dir, registry, maxOutputBytes: 10_000, onOutputCap: 'stop' })
    const result = await shell.done
    expect(result).toMatchObject({ status: 'failed', error: 'output limit of 10000 bytes reached', bytesWritten: 10_000 })
    expect(result.end).toEqual({ reason: 'limit', by: 'limit', limit: 'output', detail: 'Output limit of 10000 bytes reached' })
  })

  it('yieldMs: a quick command comes back in one call with its output tail; a slow one stays a background shell', async () => {
    const registry = shells()
    const dir = freshDir()
    const quick = join(dir, 'quick.js')
    writeFileSync(quick, `process.stdout.write('hello\\nworld\\n')\n`)
    const done = await executeBackground({ command: node(quick), cwd: dir, outputDir: dir, registry, yieldMs: 20_000 })
    expect(done.foreground).toBe(true)
    expect(done.outputTail).toBe('hello\nworld')
    expect(await done.done).toMatchObject({ status: 'completed', exitCode: 0 })
    const slow = await executeBackground({ command: 'ping -n 60 127.0.0.1 > NUL', cwd: dir, outputDir: dir, registry, yieldMs: 200 })
    expect(slow.foreground).toBe(false)
    expect(slow.outputTail).toBeUndefined()
    expect(registry.get(slow.shellId)?.status).toBe('running')
    registry.requestCancel(slow.shellId)
    expect((await slow.done).status).toBe('cancelled')
  })

  it('restart: a running shell is cancelled as restarted and runs again under its id, its file continued after the marker', async () => {
    const registry = shells()
    const dir = freshDir()
    const script = join(dir, 'runs.js')
    // Counts its runs in a file, says which run it is, then waits.
    writeFileSync(
      script,
      `const fs = require('fs'); const f = ${JSON.stringify(join(dir, 'count'))}; const n = (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0) + 1; fs.writeFileSync(f, String(n)); console.log('run ' + n); setInterval(() => {}, 1000)\n`,
    )
    const first = executeBackground({ command: node(script), cwd: dir, outputDir: dir, registry })
    await waitFor(() => readFileSync(first.outputPath, 'utf8').includes('run 1'), 20_000, 'run 1')
    const second = await registry.restart(first.shellId)
    expect(await first.done).toMatchObject({ status: 'cancelled', end: { reason: 'restarted', via: 'restart' } })
    expect(second.shellId).toBe(first.shellId)
    await waitFor(() => readFileSync(first.outputPath, 'utf8').includes('run 2'), 20_000, 'run 2')
    expect(readFileSync(first.outputPath, 'utf8').replace(/\r\n/g, '\n')).toMatch(/^run 1\n\[taskstream: restarted at [^\]]+\]\nrun 2\n$/)
    registry.requestCancel(second.shellId)
    expect((await second.done).status).toBe('cancelled')
  })

  // limits (API.md §6.8) are the task's Job Object's own limits. Wine's Job Objects accept memory
  // and process limits without enforcing them and refuse CPU rate control: there every limit is
  // refused, and the enforcement is checked on Windows itself (the CI workflow's Windows job).
  const underWine = process.env.TASKSTREAM_TEST_UNDER_WINE === '1'

  it.runIf(underWine)('limits under Wine: start() and executeBackground() throw an Error naming Wine, and nothing starts', () => {
    const { registry } = monitors()
    const shellRegistry = shells()
    const dir = freshDir()
    const marker = join(dir, 'started')
    for (const limits of [{ memoryBytes: 256 << 20 }, { maxProcesses: 4 }, { cpuPercent: 20 }]) {
      expect(() => registry.start({ command: `echo x> "${marker}"`, limits })).toThrowError(/^limits cannot be enforced under Wine: /)
      expect(() =>
        executeBackground({ command: `echo x> "${marker}"`, cwd: dir, outputDir: dir, registry: shellRegistry, limits }),
      ).toThrowError(/^limits cannot be enforced under Wine: /)
    }
    expect(registry.getAll()).toEqual([])
    expect(shellRegistry.getAll()).toEqual([])
    expect(size(marker)).toBe(0)
  })

  it.skipIf(underWine)('limits: memoryBytes ends the task with end.limit memory; maxProcesses refuses a process past it', async () => {
    const registry = shells()
    const dir = freshDir()
    // It stops at 1 GiB by itself, so a limit that does not hold fails the test, not the machine.
    const allocator = join(dir, 'allocator.js')
    writeFileSync(allocator, `const a = []; const t = setInterval(() => { a.push(Buffer.alloc(8 << 20, 1)); if (a.length >= 128) { clearInterval(t); console.log('survived') } }, 10)\n`)
    const hog = executeBackground({ command: node(allocator), cwd: dir, outputDir: dir, registry, limits: { memoryBytes: 256 << 20 } })
    const result = await hog.done
    expect(result).toMatchObject({ status: 'failed', error: `memory limit of ${256 << 20} bytes reached` })
    expect(result.end).toEqual({ reason: 'limit', by: 'limit', limit: 'memory', detail: `Memory limit of ${256 << 20} bytes reached` })
    expect(registry.get(hog.shellId)?.usage?.peakMemoryBytes).toBeLessThanOrEqual(256 << 20)

    const forker = join(dir, 'forker.js')
    writeFileSync(
      forker,
      `const cp = require('child_process'); let ok = 0, refused = 0\n` +
        `for (let i = 0; i < 6; i++) { try { const c = cp.spawnSync(process.execPath, ['-e', '0']); if (c.error || c.status !== 0) refused++; else ok++ } catch { refused++ } }\n` +
        `console.log(JSON.stringify({ ok, refused }))\n`,
    )
    // cmd and the forker are two of the three; each child runs alone (spawnSync), so all fit.
    const fits = executeBackground({ command: node(forker), cwd: dir, outputDir: dir, registry, limits: { maxProcesses: 3 } })
    expect((await fits.done).status).toBe('completed')
    expect(JSON.parse(readFileSync(fits.outputPath, 'utf8'))).toEqual({ ok: 6, refused: 0 })
    // With two, every child is refused.
    const refused = executeBackground({ command: node(forker), cwd: dir, outputDir: dir, registry, limits: { maxProcesses: 2 } })
    expect((await refused.done).status).toBe('completed')
    expect(JSON.parse(readFileSync(refused.outputPath, 'utf8'))).toEqual({ ok: 0, refused: 6 })
    expect(registry.get(refused.shellId)?.usage?.cpuMs).toBeGreaterThanOrEqual(0)
  })

  it.skipIf(underWine)('limits: cpuPercent holds a busy loop to its share of a core', async () => {
    const registry = shells()
    const dir = freshDir()
    const busy = join(dir, 'busy.js')
    writeFileSync(busy, `const end = Date.now() + 2000; while (Date.now() < end) {}\n`)
    const started = Date.now()
    const shell = executeBackground({ command: node(busy), cwd: dir, outputDir: dir, registry, limits: { cpuPercent: 20 } })
    expect((await shell.done).status).toBe('completed')
    const { cpuMs } = registry.get(shell.shellId)!.usage!
    expect(cpuMs! * 4).toBeLessThanOrEqual(Date.now() - started)
  })

  it('persist: a persisted monitor runs under the native keeper and settles with its real exit code', async () => {
    const { registry, events, terminal, done } = monitors()
    const stateDir = freshDir()
    const entry = registry.start({
      command: 'echo alpha&& ping -n 2 127.0.0.1 >NUL&& echo beta&& exit 4',
      monitorId: 'kept',
      persist: { stateDir, leaseMs: 30_000 },
    })
    expect(entry).toMatchObject({ status: 'running' })
    // The keeper is a process of its own, not this host.
    const record = JSON.parse(readFileSync(join(stateDir, 'kept.task.json'), 'utf8'))
    expect(record.keeper.pid).toEqual(expect.any(Number))
    expect(record.keeper.pid).not.toBe(process.pid)
    await done(entry)
    expect(events()).toEqual(['alpha', 'beta'])
    expect(entry).toMatchObject({ status: 'failed', error: 'Exit code 4', end: { reason: 'exited', exitCode: 4 } })
    expect(terminal()).toHaveLength(1)
    expect(terminal()[0].model).toContain('Exit code 4')
    await forgotten(stateDir)
  })

  it('persist: a persisted shell is cancelled through its keeper, its tree ends and its sidecar says so', async () => {
    const registry = shells()
    const dir = freshDir()
    const stateDir = join(dir, 'state')
    const shell = executeBackground({
      command: 'echo started& ping -n 120 127.0.0.1 >NUL',
      cwd: dir,
      outputDir: dir,
      registry,
      shellId: 'kept',
      persist: { stateDir, leaseMs: 30_000 },
    })
    expect(shell.pid).toEqual(expect.any(Number))
    const keeperLog = () => readFileSync(join(stateDir, 'kept.keeper.log'), 'utf8')
    await waitFor(() => size(shell.outputPath) > 0, 20_000, 'the shell to print').catch((error) => {
      throw new Error(`${error.message}; keeper log: ${keeperLog()}`)
    })
    expect(readFileSync(shell.outputPath, 'utf8')).toContain('started')
    expect(isRunning(shell.pid!)).toBe(true)
    registry.cancel('kept', Date.now())
    const done = await shell.done
    expect(done.status).toBe('cancelled')
    await waitFor(() => !isRunning(shell.pid!), 20_000, 'the persisted task to end')
    expect(JSON.parse(readFileSync(shell.statusPath, 'utf8'))).toMatchObject({ id: 'kept', status: 'cancelled' })
    await forgotten(stateDir)
  }, 60_000)

  it('persist: a task outlives its killed host, and the next host recovers it and stops it', async () => {
    const dir = freshDir()
    const stateDir = join(dir, 'state')
    const host = join(dir, 'host.cjs')
    writeFileSync(
      host,
      `const { MonitorRegistry } = require(${JSON.stringify(join(__dirname, '..', 'index.js'))})\n` +
        `const entry = new MonitorRegistry().start({ command: 'ping -n 120 127.0.0.1', monitorId: 'dev', persist: { stateDir: ${JSON.stringify(stateDir)}, leaseMs: 30000 } })\n` +
        `console.log(JSON.stringify({ id: entry.monitorId, pid: entry.pid }))\n` +
        `setInterval(() => {}, 1000)\n`,
    )
    const child = spawn(process.execPath, [host], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 })
    let out = ''
    let err = ''
    child.stdout!.on('data', (d) => (out += d))
    child.stderr!.on('data', (d) => (err += d))
    const exited = new Promise((resolve) => child.on('exit', resolve))
    try {
      await waitFor(() => out.includes('\n') || child.exitCode !== null, 30_000, `the host to start its task (${err})`)
      const { id, pid } = JSON.parse(out.split('\n')[0])
      expect(id).toBe('dev')
      child.kill()
      await exited
      // The host is gone; its persisted task is not (and its keeper answers the next host).
      expect(isRunning(pid)).toBe(true)
      const { registry, terminal } = monitors()
      const result = registry.recover({ stateDir })
      expect(result.adopted.map((t) => t.monitorId)).toEqual(['dev'])
      expect(result.lost).toEqual([])
      registry.cancel('dev')
      await waitFor(() => !isRunning(pid), 20_000, 'the recovered task to end')
      await waitFor(() => terminal().length === 1, 20_000, 'the recovered task to settle')
      await forgotten(stateDir)
    } finally {
      if (child.exitCode === null) child.kill()
    }
  })

  it('a task without a terminal refuses write() with an Error saying so', async () => {
    const { registry, done } = monitors()
    const entry = registry.start({ command: 'ping -n 3 127.0.0.1 > NUL' })
    expect(registry.screen(entry.id)).toBeUndefined()
    expect(() => registry.write(entry.id, 'x')).toThrowError(/no terminal/)
    await done(entry)
  })
})
