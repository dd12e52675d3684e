// A CLI restart with `persist`: CLI process 1 (test/persist-cli.ts, a real child process) starts
// a background shell, a monitor and a build through its tools and is killed with SIGKILL; the
// tasks keep running. CLI process 2 (this test process, a fresh createCli on the same stateDir)
// calls cli.recover(): `/tasks` lists them with their original ids and commands (the build,
// which failed while no CLI ran, with its real exit code), task_stop stops them, and no process
// of theirs survives.
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

import type { MonitorNotificationMeta, ShellNotificationMeta } from 'taskstream'

import { createCli, recoveredText, type Cli } from '../src/cli.js'
import { isAlive, waitFor } from './support.js'

const here = dirname(fileURLToPath(import.meta.url))
const cliScript = join(here, 'persist-cli.ts')
// CLI process 1 runs TypeScript: with vite-node, which vitest brings along.
const require = createRequire(import.meta.url)
const viteNode = join(dirname(createRequire(require.resolve('vitest')).resolve('vite-node/package.json')), 'vite-node.mjs')
const LEASE_MS = 30_000

const cleanups: (() => void | Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** Runs CLI process 1 until it reports its task ids; its process group is killed after 60 s. */
async function firstCli(project: string, tempDir: string, stateDir: string) {
  const child: ChildProcess = spawn(process.execPath, [viteNode, cliScript, project, tempDir, stateDir, String(LEASE_MS)], {
    cwd: project,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: killed whole on the timeout or at the end
  })
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  const timer = setTimeout(killGroup, 60_000)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal })
    }),
  )
  cleanups.push(killGroup)
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const line = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve(out.split('\n')[0]!)
    })
    void exited.then((r) => {
      if (!out.includes('\n')) reject(new Error(`CLI process 1 ended (${JSON.stringify(r)}) before reporting: ${stderr}`))
    })
  })
  const report = JSON.parse(line) as { ids: { shell: string; monitor: string; build: string }; startTimes: { shell: number; monitor: number } }
  return { child, exited, ...report }
}

describe('persist: a new CLI process picks up the last one\'s tasks', () => {
  it('after a SIGKILL: recover() adopts the shell and the monitor, reports the build that failed meanwhile, /tasks lists them, task_stop stops them, nothing survives', async () => {
    const project = mkdtempSync(join(tmpdir(), 'qwen-style-project-'))
    const tempDir = mkdtempSync(join(tmpdir(), 'qwen-style-tmp-'))
    const stateRoot = mkdtempSync(join(tmpdir(), 'qwen-style-state-')) // 0700
    const stateDir = join(stateRoot, 'tasks')
    cpSync(join(here, 'fixtures'), join(project, 'scripts'), { recursive: true })
    let cli: Cli | undefined
    cleanups.push(() => {
      // Whatever is left is stopped (by this CLI, or by a fresh one that recovers it); the lease
      // ends it otherwise.
      try {
        const last = cli ?? createCli({ targetDir: project, projectTempDir: tempDir, conversationId: 'conv-1', persist: { stateDir } })
        if (!cli) last.recover()
        last.context.monitors.abortAll({ notify: false })
        last.context.shells.abortAll()
      } catch {
        // nothing to stop
      }
      for (const dir of [project, tempDir, stateRoot]) rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 })
    })

    // CLI process 1 starts the tasks, then crashes.
    const first = await firstCli(project, tempDir, stateDir)
    const { ids, startTimes } = first
    first.child.kill('SIGKILL')
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' })

    // With no CLI running, the build ends: its keeper records the real exit code (in
    // <stateDir>/<id>.end.json).
    writeFileSync(join(project, 'go'), '')
    await waitFor(() => existsSync(join(stateDir, `${ids.build}.end.json`)), 10_000, 'the keeper to record the end of the build')

    // CLI process 2.
    cli = createCli({ targetDir: project, projectTempDir: tempDir, conversationId: 'conv-1', persist: { stateDir, leaseMs: LEASE_MS } })
    const notes: { id: string; status: string; text: string }[] = []
    cli.context.monitors.setNotificationCallback((_d: string, model: string, meta: MonitorNotificationMeta) =>
      notes.push({ id: meta.monitorId, status: meta.status, text: model }),
    )
    cli.context.shells.setNotificationCallback((_d: string, model: string, meta: ShellNotificationMeta) =>
      notes.push({ id: meta.shellId, status: meta.status, text: model }),
    )
    const found = cli.recover()
    expect(found).toEqual({ adopted: [ids.monitor, ids.shell], settled: [ids.build], lost: [], corrupt: [], busy: [] })
    expect(recoveredText(found)).toBe(
      `From the last session: 2 background tasks still running (${ids.monitor}, ${ids.shell}); 1 ended meanwhile (${ids.build}). Type /tasks to see them.`,
    )

    const shell = cli.context.shells.get(ids.shell)!
    const monitor = cli.context.monitors.get(ids.monitor)!
    // The build is reported once, with its real exit code.
    expect(cli.context.shells.get(ids.build)).toMatchObject({ status: 'failed', end: { reason: 'exited', by: 'process', exitCode: 3 } })
    await waitFor(() => notes.some((n) => n.id === ids.build), 10_000, "the build's terminal notification")
    expect(notes.filter((n) => n.id === ids.build).map((n) => n.status)).toEqual(['failed'])
    expect(notes.find((n) => n.id === ids.build)!.text).toContain('<status>failed</status>')

    // The helper processes beside the servers (their pids are in the ready lines).
    const shellOutput = join(tempDir, 'background-shells', 'conv-1', `shell-${ids.shell}.output`)
    const helper = (text: string) => Number(/ready \(helper (\d+)\)/.exec(text)?.[1])
    const helpers = [helper(readFileSync(shellOutput, 'utf8')), helper(readFileSync(join(stateDir, `${ids.monitor}.log`), 'utf8'))]
    // And their keepers (recorded in <stateDir>/<id>.task.json).
    const keeper = (id: string) => (JSON.parse(readFileSync(join(stateDir, `${id}.task.json`), 'utf8')) as { keeper: { pid: number } }).keeper.pid
    const processes = [shell.pid!, monitor.pid!, ...helpers, keeper(ids.shell), keeper(ids.monitor)]
    for (const pid of processes) expect(isAlive(pid), `pid ${pid}`).toBe(true)
    // Each keeper is the native executable shipped beside the addon (no `node` process).
    if (process.platform === 'linux') {
      // The addon this process loaded, from its memory map.
      const addon = /\s(\/\S*taskstream\.[\w-]+\.node)$/m.exec(readFileSync('/proc/self/maps', 'utf8'))![1]!
      const addonDir = dirname(realpathSync(addon))
      for (const pid of [keeper(ids.shell), keeper(ids.monitor)]) {
        expect(readlinkSync(`/proc/${pid}/exe`)).toBe(join(addonDir, 'taskstream-keeper'))
      }
    }

    // /tasks: all three, with their original ids and commands.
    const listed = cli.tasks()
    expect(listed).toContain('Background tasks (3 total)')
    expect(listed).toMatch(new RegExp(`^\\[${ids.shell}\\] running  \\S+ pid=${shell.pid}  bash scripts/server\\.sh api$`, 'm'))
    expect(listed).toContain(`output: ${shellOutput}`)
    expect(listed).toMatch(new RegExp(`^\\[${ids.monitor}\\] running \\(\\d+ events?\\)  \\S+ pid=${monitor.pid}  web server$`, 'm'))
    expect(listed).toMatch(new RegExp(`^\\[${ids.build}\\] failed: exited with code 3  \\S+ pid=\\d+  echo building; while`, 'm'))
    expect(monitor.command).toBe('bash scripts/server.sh web')
    expect(shell.command).toBe('bash scripts/server.sh api')
    expect({ shell: shell.startTime, monitor: monitor.startTime }).toEqual(startTimes)

    // task_stop stops both; nothing of theirs survives.
    const stopMonitor = cli.taskStopTool.execute({ task_id: ids.monitor })
    expect(stopMonitor.returnDisplay).toBe(`Stopped monitor ${ids.monitor}.`)
    const stopShell = cli.taskStopTool.execute({ task_id: ids.shell })
    expect(stopShell.returnDisplay).toBe(`Stopping background shell ${ids.shell}.`)
    await waitFor(() => cli!.context.shells.get(ids.shell)?.status === 'cancelled', 10_000, 'the shell to settle cancelled')
    expect(cli.context.monitors.get(ids.monitor)!.status).toBe('cancelled')
    await waitFor(() => processes.every((pid) => !isAlive(pid)), 10_000, `no survivor among ${processes.join(', ')}`)
    const after = cli.tasks()
    expect(after).toMatch(new RegExp(`^\\[${ids.shell}\\] cancelled  `, 'm'))
    expect(after).toMatch(new RegExp(`^\\[${ids.monitor}\\] cancelled \\(`, 'm'))

    // A third CLI process finds nothing left to pick up.
    const third = createCli({ targetDir: project, projectTempDir: tempDir, conversationId: 'conv-1', persist: { stateDir } })
    await waitFor(() => !existsSync(join(stateDir, `${ids.shell}.task.json`)) && !existsSync(join(stateDir, `${ids.monitor}.task.json`)), 10_000, 'the state to be removed')
    const again = third.recover()
    expect(again).toEqual({ adopted: [], settled: [], lost: [], corrupt: [], busy: [] })
    expect(recoveredText(again)).toBeNull()
  }, 60_000)

  it('recover() without persist is an error', () => {
    const cli = createCli({ targetDir: tmpdir(), projectTempDir: tmpdir(), conversationId: 'conv-1' })
    expect(() => cli.recover()).toThrow('recover() needs the persist option of createCli()')
  })
})
