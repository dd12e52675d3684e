// Scale benchmark: many idle tasks in one Node process. Each
// cell starts background shells (`executeBackground({ command: 'sleep 600' })`,
// each handle unref()'d, one BackgroundShellRegistry) and native monitors
// (`MonitorRegistry.start({ command: 'sleep 600' })`, one registry with
// maxConcurrent 1000000), lets them settle, measures, then abortAll()s both
// registries and waits until every child is dead.
//
// Every measurement runs in a fresh Node process (`--worker tasks <shells>
// <monitors> <on|off> <dir>`); the parent only collects JSON, checks that
// none of the worker's children outlived it, and prints the tables.
//
// Cells (sizes configurable, defaults in brackets):
//   goal            BENCH_SCALE_N shells + BENCH_SCALE_N monitors [400 + 400]: the goal cell
//   node            the anchor for the goal cell's start cost: what the
//                   TypeScript core pays for the same starts, in the same
//                   run: BENCH_SCALE_N times Node's own
//                   `child_process.spawn('bash', ['-c', 'sleep 600'])` (piped
//                   stdio, its own process group: detached) with the shell's
//                   output file and status sidecar (through a temporary file
//                   and a rename), then BENCH_SCALE_N such spawns alone
//                   (`--worker node …`)
//   goal-nocgroup   the same with TASKSTREAM_CGROUP=0 (no per-task cgroups)
//   big             BENCH_SCALE_BIG/2 shells + BENCH_SCALE_BIG/2 monitors [500 + 500]
//   big-nocgroup    the same with TASKSTREAM_CGROUP=0
//   monitors        BENCH_SCALE_BIG monitors alone [1000]
// Each cell runs BENCH_RUNS times [3], interleaved (the node cell right after
// the goal cell in every run); the tables show medians
// and the notes list every run. BENCH_SCALE_SETTLE_MS [1000] is the pause
// before the baseline and after the last start. BENCH_ONLY=goal,monitors runs
// a subset. BENCH_TMPDIR=<dir> puts the (empty) output files elsewhere
// (default: os.tmpdir()). BENCH_BINARY=<path> picks the binary.
// BENCH_IGNORE_BUILDS=1 measures even while builds run (smoke runs). Only a
// default run replaces the scale section of bench/RESULTS.md (BENCH_WRITE=1
// forces it).
//
// What is measured (Linux /proc):
//   threads added   /proc/self/task entries after the starts and the settle
//                   pause minus before the first start (libuv's thread pool is
//                   started before the baseline, as any real host has it)
//   RSS growth      process.memoryUsage().rss after the settle pause minus before
//   JS-thread time  per start: the wall time inside each start() /
//                   executeBackground() call (averaged), and the main thread's
//                   own CPU over the start loops divided by the starts, from
//                   /proc/self/task/<pid>/stat utime+stime (clock ticks, 10 ms:
//                   only the total is meaningful) and from schedstat (ns)
//   abortAll()      wall time inside each registry's call, then the time until
//                   every child of the worker (all its descendants but the
//                   watchdog) has exited (a zombie counts as exited), until
//                   every one is reaped, and until every shell's `done` and
//                   every monitor's terminal notification arrived
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, closeSync, constants as fsConstants, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'
import { threadSched } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')

const CFG = {
  n: envInt('BENCH_SCALE_N', 400),
  big: envInt('BENCH_SCALE_BIG', 1000),
  settleMs: envInt('BENCH_SCALE_SETTLE_MS', 1000),
  runs: envInt('BENCH_RUNS', 3),
}
const GOAL = { threads: 32, rssMiB: 40, ratio: 1.0 }
const COMMAND = 'sleep 600'
const MiB = 2 ** 20

const half = Math.floor(CFG.big / 2)
const CELLS = {
  goal: { shells: CFG.n, monitors: CFG.n, cgroup: 'on' },
  node: { shells: CFG.n, monitors: CFG.n, cgroup: 'on', scenario: 'node' },
  'goal-nocgroup': { shells: CFG.n, monitors: CFG.n, cgroup: 'off' },
  big: { shells: half, monitors: CFG.big - half, cgroup: 'on' },
  'big-nocgroup': { shells: half, monitors: CFG.big - half, cgroup: 'off' },
  monitors: { shells: 0, monitors: CFG.big, cgroup: 'on' },
}
const cellLabel = (name) => {
  const c = CELLS[name]
  if (c.scenario === 'node') return `Node \`child_process.spawn\`: ${c.shells} shells (+ file and sidecar) + ${c.monitors} monitors`
  const what = c.shells ? `${c.shells} shells + ${c.monitors} monitors` : `${c.monitors} monitors`
  return c.cgroup === 'off' ? `${what}, TASKSTREAM_CGROUP=0` : what
}

// =============================================================== /proc helpers

let clkTck = 100
try {
  clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
} catch {}

/** The fields after the command name of /proc/<pid>/stat (index 0 = field 3, the state), or null. */
function statFields(path) {
  try {
    const s = readFileSync(path, 'utf8')
    return s.slice(s.lastIndexOf(') ') + 2).split(' ')
  } catch {
    return null
  }
}

/** `{ state, ppid, start }` of a process, or null when it is gone. */
function procStat(pid) {
  const f = statFields(`/proc/${pid}/stat`)
  return f ? { state: f[0], ppid: Number(f[1]), start: f[19] } : null
}

/** The threads of this process: tid → name. */
function threads() {
  const out = new Map()
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(tid, readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim())
    } catch {}
  }
  return out
}

/** The main thread's own CPU in ms from /proc stat utime+stime (clock-tick resolution). */
function mainThreadStatMs() {
  const f = statFields(`/proc/self/task/${process.pid}/stat`)
  return ((Number(f[11]) + Number(f[12])) * 1000) / clkTck
}

const isWatchdog = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('taskstream-watchdog')
  } catch {
    return false
  }
}

/** Every descendant of `ancestor` but taskstream's watchdog, as `[pid, start time, state]`. */
function descendants(ancestor = process.pid) {
  const children = new Map()
  const info = new Map()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const s = procStat(name)
    if (!s) continue
    info.set(Number(name), s)
    if (!children.has(s.ppid)) children.set(s.ppid, [])
    children.get(s.ppid).push(Number(name))
  }
  const out = []
  const queue = [...(children.get(ancestor) ?? [])]
  while (queue.length) {
    const pid = queue.shift()
    if (isWatchdog(pid)) continue
    out.push([pid, info.get(pid).start, info.get(pid).state])
    queue.push(...(children.get(pid) ?? []))
  }
  return out
}

/** Whether the process `[pid, start]` still runs (a zombie or a reused pid does not). */
const running = ([pid, start]) => {
  const s = procStat(pid)
  return !!s && s.start === start && s.state !== 'Z' && s.state !== 'X'
}
/** Whether the process `[pid, start]` still has a /proc entry (running or a zombie). */
const present = ([pid, start]) => procStat(pid)?.start === start

/** This host's directory of task cgroups (see src/core/process/unix/cgroup.rs), or null without cgroup v2. */
function taskCgroupBase(pid = process.pid) {
  try {
    const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))?.slice(3)
    const mount = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find((l) => l.split(' - ')[1]?.startsWith('cgroup2 '))
      ?.split(' ')[4]
    if (own === undefined || !mount) return null
    return join(mount, own, `taskstream-${pid}`)
  } catch {
    return null
  }
}

const countCgroups = (base) => {
  try {
    return readdirSync(base, { withFileTypes: true }).filter((d) => d.isDirectory()).length
  } catch {
    return 0
  }
}

// =============================================================== worker side

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Polls `done()` every 5 ms (at most `maxMs`); resolves with the ms it took, or NaN on time-out. */
async function until(done, t0, maxMs) {
  for (;;) {
    if (done()) return performance.now() - t0
    if (performance.now() - t0 > maxMs) return NaN
    await sleep(5)
  }
}

/**
 * The measurement both sides share: `impl.startShell(i)` nShells times, then
 * `impl.startMonitor(i)` nMonitors times, each call timed on the JS thread;
 * the settle pause; threads, RSS and children; then `impl.abortShells()`,
 * `impl.abortMonitors()` and the wait until every child is gone and
 * `impl.settled()`.
 */
async function measureStarts(nShells, nMonitors, dir, impl) {
  // libuv's thread pool starts on the first asynchronous fs call: before the baseline.
  await stat(dir)
  await sleep(CFG.settleMs)

  const threads0 = threads()
  const rss0 = process.memoryUsage().rss
  const stat0 = mainThreadStatMs()
  const sched0 = threadSched(process.pid)[0]
  let shellCallMs = 0
  for (let i = 0; i < nShells; i++) {
    const c0 = performance.now()
    impl.startShell(i)
    shellCallMs += performance.now() - c0
  }
  const stat1 = mainThreadStatMs()
  const sched1 = threadSched(process.pid)[0]
  let monitorCallMs = 0
  for (let i = 0; i < nMonitors; i++) {
    const c0 = performance.now()
    impl.startMonitor(i)
    monitorCallMs += performance.now() - c0
  }
  const stat2 = mainThreadStatMs()
  const sched2 = threadSched(process.pid)[0]
  await sleep(CFG.settleMs)
  const threads1 = threads()
  const rss1 = process.memoryUsage().rss

  const added = {}
  for (const [tid, name] of threads1) if (!threads0.has(tid)) added[name] = (added[name] ?? 0) + 1
  const { shellsRunning, monitorsRunning, startFailures } = impl.running()
  const children = descendants()
  const sleeps = children.filter(([pid]) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === 'sleep\u0000600\u0000'
    } catch {
      return false
    }
  }).length
  const cgroupBase = taskCgroupBase()
  const cgroupsDuring = cgroupBase ? countCgroups(cgroupBase) : 0

  // ------------------------------------------------------------ abortAll
  const a0 = performance.now()
  impl.abortShells()
  const a1 = performance.now()
  impl.abortMonitors()
  const a2 = performance.now()
  const deadMs = await until(() => !children.some(running), a0, 30_000)
  const reapedMs = await until(() => !children.some(present), a0, 30_000)
  const settledMs = await until(impl.settled, a0, 30_000)
  const cgroupsGoneMs = cgroupBase ? await until(() => countCgroups(cgroupBase) === 0, a0, 10_000) : 0

  // Nothing may outlive this worker: anything still here is reported and killed.
  const left = descendants()
  for (const [pid, start] of left) {
    if (procStat(pid)?.start === start) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
  }
  rmSync(dir, { recursive: true, force: true })
  return {
    workerPid: process.pid,
    cgroupBase,
    shells: nShells,
    monitors: nMonitors,
    threadsBefore: threads0.size,
    threadsAfter: threads1.size,
    threadsAdded: threads1.size - threads0.size,
    addedNames: added,
    rssGrowth: rss1 - rss0,
    shellCallMs: nShells ? shellCallMs / nShells : NaN,
    monitorCallMs: nMonitors ? monitorCallMs / nMonitors : NaN,
    callMs: (shellCallMs + monitorCallMs) / (nShells + nMonitors),
    statMsPerStart: (stat2 - stat0) / (nShells + nMonitors),
    statMsTotal: stat2 - stat0,
    schedMsPerStart: (sched2 - sched0) / (nShells + nMonitors),
    schedMsPerShell: nShells ? (sched1 - sched0) / nShells : NaN,
    schedMsPerMonitor: nMonitors ? (sched2 - sched1) / nMonitors : NaN,
    statMsPerShell: nShells ? (stat1 - stat0) / nShells : NaN,
    shellsRunning,
    monitorsRunning,
    startFailures,
    childCount: children.length,
    sleeps,
    cgroupsDuring,
    abortShellsMs: a1 - a0,
    abortMonitorsMs: a2 - a1,
    deadMs,
    reapedMs,
    settledMs,
    cgroupsGoneMs,
    left: left.map(([pid, , state]) => `${pid} (${state})`),
    children: children.map(([pid, start]) => [pid, start]),
  }
}

const scenarios = {
  /** taskstream: executeBackground() shells and MonitorRegistry.start() monitors. */
  async tasks(shellsArg, monitorsArg, cgroup, dir) {
    const nShells = Number(shellsArg)
    const nMonitors = Number(monitorsArg)
    // Read by taskstream once, at its first task.
    if (cgroup === 'off') process.env.TASKSTREAM_CGROUP = '0'
    mkdirSync(dir, { recursive: true })
    const ts = loadTaskstream()
    const shellRegistry = new ts.BackgroundShellRegistry()
    const monitorRegistry = new ts.MonitorRegistry({ maxConcurrent: 1_000_000, maxRetainedTerminal: 1_000_000 })
    let monitorTerminals = 0
    monitorRegistry.setNotificationCallback((_d, _m, meta) => {
      if (meta.status !== 'running') monitorTerminals++
    })
    const handles = []
    const entries = []
    let shellsDone = 0
    return measureStarts(nShells, nMonitors, dir, {
      startShell(i) {
        const h = ts.executeBackground({ command: COMMAND, cwd: root, outputDir: dir, registry: shellRegistry, shellId: `scale${i}` })
        h.unref()
        handles.push(h)
      },
      startMonitor() {
        entries.push(monitorRegistry.start({ command: COMMAND, cwd: root, idleTimeoutMs: 600_000 }))
      },
      running() {
        for (const h of handles) h.done.then(() => shellsDone++, () => shellsDone++)
        return {
          shellsRunning: shellRegistry.getAll().filter((e) => e.status === 'running').length,
          monitorsRunning: monitorRegistry.getRunning().length,
          startFailures: [
            ...shellRegistry.getAll().filter((e) => e.status !== 'running').map((e) => `shell ${e.id}: ${e.status} ${e.error ?? ''}`),
            ...entries.filter((e) => e.status !== 'running').map((e) => `monitor ${e.id}: ${e.status} ${e.error ?? ''}`),
          ].slice(0, 5),
        }
      },
      abortShells: () => shellRegistry.abortAll(),
      abortMonitors: () => monitorRegistry.abortAll(),
      settled: () => shellsDone === nShells && monitorTerminals === nMonitors,
    })
  },

  /**
   * The anchor: what the TypeScript core pays for the same starts on the JS
   * thread. A monitor is Node's `child_process.spawn('bash', ['-c', command])`
   * with piped stdio and its own process group (`detached: true`), stdout and
   * stderr listened to; a shell is the same spawn plus what the TypeScript
   * core does around it: the output directory (recursive mkdir), the output
   * file opened truncated (0600, no symlink followed), and the status sidecar
   * written as its registry's `register` does (`atomicWriteFileSync`:
   * `JSON.stringify(payload, null, 2)` to `<status>.<12 hex>.tmp`, mode 0600,
   * chmod, rename). Aborting kills each child's process group.
   */
  async node(shellsArg, monitorsArg, _cgroup, dir) {
    const nShells = Number(shellsArg)
    const nMonitors = Number(monitorsArg)
    mkdirSync(dir, { recursive: true })
    const env = { ...process.env, TERM: 'xterm-256color', PAGER: 'cat', GIT_PAGER: 'cat' }
    const shells = []
    const monitors = []
    let closed = 0
    const outputFlags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW
    const start = (list, onData) => {
      const child = spawn('bash', ['-c', COMMAND], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
      const task = { child, status: 'running', error: undefined }
      child.stdout.on('data', onData)
      child.stderr.on('data', onData)
      child.on('error', (e) => {
        task.status = 'failed'
        task.error = e.message
      })
      child.on('close', () => {
        if (task.status === 'running') task.status = 'exited'
        closed++
      })
      list.push(task)
      return task
    }
    const kill = (list) => {
      for (const { child } of list) {
        try {
          process.kill(-child.pid, 'SIGKILL')
        } catch {}
      }
    }
    return measureStarts(nShells, nMonitors, dir, {
      startShell(i) {
        const id = `scale${i}`
        const startTime = Date.now()
        mkdirSync(dir, { recursive: true })
        const outputPath = join(dir, `shell-${id}.output`)
        let fd
        try {
          fd = openSync(outputPath, outputFlags, 0o600)
        } catch {}
        const task = start(shells, (d) => fd !== undefined && writeSync(fd, d))
        task.fd = fd
        const statusPath = `${outputPath.slice(0, -'.output'.length)}.status`
        const payload = { id, status: 'running', command: COMMAND, cwd: root, startTime: new Date(startTime).toISOString(), updatedAt: new Date().toISOString() }
        if (task.child.pid !== undefined) payload.pid = task.child.pid
        payload.ownerPid = process.pid
        const tmpPath = `${statusPath}.${randomBytes(6).toString('hex')}.tmp`
        try {
          writeFileSync(tmpPath, JSON.stringify(payload, null, 2), { encoding: 'utf-8', mode: 0o600 })
          chmodSync(tmpPath, 0o600)
          renameSync(tmpPath, statusPath)
        } catch {}
      },
      startMonitor() {
        start(monitors, () => {})
      },
      running: () => ({
        shellsRunning: shells.filter((t) => t.status === 'running').length,
        monitorsRunning: monitors.filter((t) => t.status === 'running').length,
        startFailures: [...shells, ...monitors].filter((t) => t.status !== 'running').map((t) => `${t.child.pid}: ${t.status} ${t.error ?? ''}`).slice(0, 5),
      }),
      abortShells: () => kill(shells),
      abortMonitors: () => kill(monitors),
      settled: () => {
        if (closed !== nShells + nMonitors) return false
        for (const t of shells) if (t.fd !== undefined) closeSync(t.fd), (t.fd = undefined)
        return true
      },
    })
  },
}

// =============================================================== parent side

/**
 * One measurement in a fresh Node process; afterwards, none of its children
 * may still run (any that does is killed and reported) and its cgroup
 * directory must go away.
 */
async function worker(cell, dir) {
  const c = CELLS[cell]
  try {
    const r = await spawnWorker(fileURLToPath(import.meta.url), c.scenario ?? 'tasks', String(c.shells), String(c.monitors), c.cgroup, dir)
    const survivors = r.children.filter((p) => running(p))
    for (const [pid] of survivors) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    r.survivors = survivors.map(([pid]) => pid)
    delete r.children
    if (r.cgroupBase) {
      const t0 = performance.now()
      while (existsSync(r.cgroupBase) && performance.now() - t0 < 5000) await sleep(50)
      r.cgroupBaseLeft = existsSync(r.cgroupBase)
    }
    return r
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const f1 = (v) => (Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) : 'n/a')
const f3 = (v) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a')
const med = (runs, key) => median(runs.map((r) => (typeof key === 'function' ? key(r) : r[key])))

async function runParent() {
  if (process.platform !== 'linux') throw new Error('bench/scale.mjs reads /proc: Linux only')
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null
  if (only && [...only].some((s) => !CELLS[s])) throw new Error(`BENCH_ONLY: unknown cell in ${process.env.BENCH_ONLY} (cells: ${Object.keys(CELLS).join(', ')})`)
  const names = Object.keys(CELLS).filter((s) => !only || only.has(s))
  const quiet = await waitForQuiet()
  const facts = machineFacts()
  const started = performance.now()
  const tmpRoot = mkdtempSync(join(process.env.BENCH_TMPDIR || tmpdir(), 'taskstream-bench-scale-'))
  process.on('exit', () => rmSync(tmpRoot, { recursive: true, force: true }))
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
  console.log(`taskstream scale benchmark: ${binaryFacts()}`)
  console.log(`config: ${JSON.stringify(CFG)}; cells: ${names.join(', ')}; output files under ${tmpRoot}\n`)
  // Load check: fails fast if the release binary is missing.
  loadTaskstream()

  const R = Object.fromEntries(names.map((n) => [n, []]))
  const disturbedSteps = []
  let stepNo = 0
  for (let run = 1; run <= CFG.runs; run++) {
    for (const name of names) {
      const label = `${name} #${run}`
      const t = performance.now()
      const r = await undisturbed(label, () => worker(name, join(tmpRoot, `step-${stepNo++}`)))
      R[name].push(r.value)
      if (r.disturbed) disturbedSteps.push(label)
      process.stderr.write(`  ${label.padEnd(28)} ${((performance.now() - t) / 1000).toFixed(1)} s${r.attempts > 1 ? ` (${r.attempts} attempts)` : ''}\n`)
    }
  }

  // ------------------------------------------------------------ tables
  const agg = CFG.runs > 1 ? `median of ${CFG.runs} runs` : '1 run'
  const metric = (label, fn) => [label, ...names.map((n) => fn(R[n]))]
  const rows = [
    metric('tasks running after the settle pause (shells + monitors)', (x) => `${med(x, 'shellsRunning')} + ${med(x, 'monitorsRunning')}`),
    metric('`sleep 600` children seen / all children (the watchdog excluded)', (x) => `${med(x, 'sleeps')} / ${med(x, 'childCount')}`),
    metric('task cgroups while running', (x) => med(x, 'cgroupsDuring')),
    metric(`threads added (after ${CFG.settleMs} ms)`, (x) => med(x, 'threadsAdded')),
    metric('RSS growth (MiB)', (x) => f1(med(x, 'rssGrowth') / MiB)),
    metric('JS thread: wall time inside one executeBackground() call, mean (ms)', (x) => f3(med(x, 'shellCallMs'))),
    metric('JS thread: wall time inside one start() call, mean (ms)', (x) => f3(med(x, 'monitorCallMs'))),
    metric('JS thread: wall time inside one call, mean over all starts (ms)', (x) => f3(med(x, 'callMs'))),
    metric('JS main-thread CPU per start, /proc stat utime+stime (ms; total in 10 ms ticks)', (x) => `${f3(med(x, 'statMsPerStart'))} (${f1(med(x, 'statMsTotal'))})`),
    metric('JS main-thread CPU per start, /proc schedstat (ms): all / shells / monitors', (x) => `${f3(med(x, 'schedMsPerStart'))} / ${f3(med(x, 'schedMsPerShell'))} / ${f3(med(x, 'schedMsPerMonitor'))}`),
    metric('abortAll() wall inside the call (ms): shell registry / monitor registry', (x) => `${f1(med(x, 'abortShellsMs'))} / ${f1(med(x, 'abortMonitorsMs'))}`),
    metric('abortAll() → every child exited (ms)', (x) => f1(med(x, 'deadMs'))),
    metric('abortAll() → every child reaped (ms)', (x) => f1(med(x, 'reapedMs'))),
    metric('abortAll() → every `done` and terminal notification (ms)', (x) => f1(med(x, 'settledMs'))),
    metric('abortAll() → every task cgroup removed (ms)', (x) => (med(x, 'cgroupsDuring') ? f1(med(x, 'cgroupsGoneMs')) : '–')),
    metric('processes left after abortAll / after the worker exited (must be 0)', (x) => `${x.reduce((a, r) => a + r.left.length, 0)} / ${x.reduce((a, r) => a + r.survivors.length, 0)}`),
  ]
  const targets = []
  const notes = []
  let ratioTable = ''
  const verdict = (ok) => (ok ? 'met' : '**missed**')
  const G = R.goal
  if (G?.length) {
    const th = med(G, 'threadsAdded')
    const rss = med(G, 'rssGrowth') / MiB
    targets.push(
      [`${cellLabel('goal')}: at most ${GOAL.threads} threads added`, `${th}`, verdict(th <= GOAL.threads)],
      [`${cellLabel('goal')}: RSS growth ≤ ${GOAL.rssMiB} MiB`, `${f1(rss)} MiB`, verdict(rss <= GOAL.rssMiB)],
    )
  }
  // Start cost against what it replaces: taskstream's cells over Node's, medians of each side.
  const N = R.node
  const ratioRows = []
  if (N?.length) {
    const x = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : 'n/a')
    const side = (name) => R[name]
    const sides = names.filter((n) => n !== 'node' && CELLS[n].shells === CELLS.node.shells && CELLS[n].monitors === CELLS.node.monitors)
    const measures = [
      ['wall inside one call, all starts (ms)', 'callMs'],
      ['wall inside one call, shells (ms)', 'shellCallMs'],
      ['wall inside one call, monitors (ms)', 'monitorCallMs'],
      ['main-thread CPU per start, schedstat, all starts (ms)', 'schedMsPerStart'],
      ['main-thread CPU per start, schedstat, shells (ms)', 'schedMsPerShell'],
      ['main-thread CPU per start, schedstat, monitors (ms)', 'schedMsPerMonitor'],
      ['main-thread CPU per start, /proc stat, all starts (ms)', 'statMsPerStart'],
    ]
    for (const [label, key] of measures) {
      const node = med(N, key)
      ratioRows.push([label, f3(node), ...sides.map((n) => `${f3(med(side(n), key))} (${x(med(side(n), key) / node)})`)])
    }
    // Paired per run: the taskstream cell of run k over the Node cell of run k (measured one after the other).
    const paired = (n, key) => median(R[n].map((r, i) => r[key] / N[i][key]))
    ratioRows.push([
      'ratio per run, paired with the Node cell of the same run (median): wall / schedstat CPU',
      '1',
      ...sides.map((n) => `${x(paired(n, 'callMs'))} / ${x(paired(n, 'schedMsPerStart'))}`),
    ])
    ratioTable = table(['JS thread, per start', cellLabel('node'), ...sides.map((n) => `${cellLabel(n)} (ratio to Node)`)], ratioRows)
    if (G?.length) {
      const wall = med(G, 'callMs') / med(N, 'callMs')
      const cpu = med(G, 'schedMsPerStart') / med(N, 'schedMsPerStart')
      const cpuStat = med(G, 'statMsPerStart') / med(N, 'statMsPerStart')
      targets.push(
        [`${cellLabel('goal')}: JS-thread wall time per start ≤ ${GOAL.ratio.toFixed(1)}× Node's (mean inside the call, medians)`, `${f3(med(G, 'callMs'))} / ${f3(med(N, 'callMs'))} ms = ${x(wall)}`, verdict(wall <= GOAL.ratio)],
        [
          `${cellLabel('goal')}: main-thread CPU per start ≤ ${GOAL.ratio.toFixed(1)}× Node's (schedstat; /proc stat)`,
          `${f3(med(G, 'schedMsPerStart'))} / ${f3(med(N, 'schedMsPerStart'))} ms = ${x(cpu)}; ${x(cpuStat)}`,
          verdict(cpu <= GOAL.ratio && cpuStat <= GOAL.ratio),
        ],
      )
    }
  }
  for (const name of names) {
    const x = R[name]
    notes.push(
      `${name} per run: threads added ${x.map((r) => r.threadsAdded).join(', ')}; RSS growth MiB ${x.map((r) => f1(r.rssGrowth / MiB)).join(', ')}; ms per start (call wall / schedstat CPU / stat CPU) ${x.map((r) => `${f3(r.callMs)} / ${f3(r.schedMsPerStart)} / ${f3(r.statMsPerStart)}`).join('; ')}; abortAll → all exited ms ${x.map((r) => f1(r.deadMs)).join(', ')}`,
    )
    notes.push(`${name}: threads added (first run, by name): ${Object.entries(x[0].addedNames).map(([k, v]) => `${k} ×${v}`).join(', ') || 'none'} (${x[0].threadsBefore} before)`)
    for (const r of x) {
      if (r.startFailures.length) notes.push(`${name}: UNEXPECTED tasks not running: ${r.startFailures.join('; ')}`)
      if (r.shellsRunning !== r.shells || r.monitorsRunning !== r.monitors) notes.push(`${name}: UNEXPECTED ${r.shellsRunning}/${r.shells} shells and ${r.monitorsRunning}/${r.monitors} monitors running`)
      if (r.left.length) notes.push(`${name}: UNEXPECTED processes left after abortAll (killed): ${r.left.slice(0, 10).join(', ')}`)
      if (r.survivors.length) notes.push(`${name}: UNEXPECTED processes outlived the worker (killed): ${r.survivors.slice(0, 10).join(', ')}`)
      if (r.cgroupBaseLeft) notes.push(`${name}: UNEXPECTED ${r.cgroupBase} still exists 5 s after the worker exited`)
      if (!Number.isFinite(r.deadMs) || !Number.isFinite(r.settledMs)) notes.push(`${name}: UNEXPECTED time-out waiting for the children to exit or the tasks to settle`)
    }
  }

  const elapsed = ((performance.now() - started) / 1000).toFixed(0)
  const md = `## Many idle tasks (\`bench/scale.mjs\`)

${factsMarkdown(facts, {
    Binary: binaryFacts(),
    Config: `\`${JSON.stringify(CFG)}\``,
    'Wall time': `${elapsed} s`,
    'Machine before the run': quiet,
    'Steps measured next to a cargo/rustc build (†)': disturbedSteps.length ? disturbedSteps.join(', ') : 'none (steps that met one were measured again)',
  })}

One Node process (a fresh worker per cell and run) starts background shells
(\`executeBackground({ command: '${COMMAND}' })\`, each handle unref()'d) and then native monitors
(\`MonitorRegistry.start({ command: '${COMMAND}' })\`, maxConcurrent 1000000), waits ${CFG.settleMs} ms, measures,
and then calls \`abortAll()\` on both registries. The Node cell is the anchor, what the TypeScript
core pays for the same starts: Node's own \`child_process.spawn('bash', ['-c', '${COMMAND}'])\` with piped
stdio and its own process group (\`detached: true\`), stdout and stderr listened to; for a shell, first
the output directory (recursive mkdir) and the output file (opened truncated, 0600, \`O_NOFOLLOW\`),
and after the spawn the status sidecar as the TypeScript registry's \`register\` writes it
(\`JSON.stringify(…, null, 2)\` into \`<status>.<12 hex>.tmp\` with mode 0600, chmod, rename); its
"abortAll" kills each child's process group. Threads = \`/proc/self/task\` entries after the
starts and the pause minus before the first start (libuv's thread pool started before the
baseline). JS-thread time per start = wall time inside each call (mean), and the main thread's own
CPU over the start loops divided by the starts (/proc stat utime+stime in 10 ms ticks, and
schedstat). After \`abortAll()\` every child of the worker (its descendants but taskstream's watchdog)
is polled every 5 ms until it has exited (a zombie counts) and until it is reaped; the parent checks
that none outlived the worker. TASKSTREAM_CGROUP=0 turns per-task cgroups off. Cells show the ${agg}.

${table(['metric', ...names.map(cellLabel)], rows)}
${ratioTable ? `\nStart cost against Node's own spawn, same run (the Node cell is measured right after the taskstream goal cell in each run):\n\n${ratioTable}\n` : ''}${targets.length ? `\nThe issue's goals:\n\n${table(['goal', 'measured', ''], targets, ['l', 'r', 'l'])}\n` : ''}
${notes.map((n) => `- ${n}`).join('\n')}
`
  console.log(md)
  const sizeVars = Object.keys(process.env).filter((n) => n.startsWith('BENCH_') && !['BENCH_WRITE', 'BENCH_TMPDIR'].includes(n))
  if (mayWriteResults(sizeVars)) {
    const path = writeSection('scale', md)
    console.log(`(written to ${path})`)
  } else console.log('(non-default run: bench/RESULTS.md left alone; BENCH_WRITE=1 writes it anyway)')
}

if (process.argv[2] === '--worker') await runWorker(scenarios[process.argv[3]], process.argv[4], process.argv[5], process.argv[6], process.argv[7])
else await runParent()
