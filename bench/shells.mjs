// Background-shell benchmark: taskstream's executeBackground() against a
// pure-JavaScript reference of the TypeScript background shell
// (bench/reference-shell.mjs), side by side in one run.
//
// Every measurement runs in a fresh Node process (`--worker <scenario>
// <impl> <dir>`), so heap growth, JIT state and RSS of one run cannot leak
// into the next; the parent only collects JSON and prints the table.
//
// Scenarios (sizes configurable, defaults in brackets):
//   idle      event-loop delay with nothing running               [BENCH_IDLE_MS=3000]
//   big       one command writing BENCH_SHELL_BYTES of ANSI-coloured log lines
//             (`yes "$(printf '\033[32mINFO\033[0m …')" | head -c N`) [1 GiB]:
//             start → done (taskstream) / close + finish (reference), vs the
//             same command `> file` in the same temp dir; each of the three is
//             run BENCH_SHELL_RUNS times, interleaved, medians reported [3]
//   many      BENCH_SHELLS_N shells started at once [100], each printing
//             BENCH_SHELLS_EACH_BYTES of its own plain text lines [10 MiB]
// BENCH_QUICK=1 shrinks everything (128 MiB, 20 × 2 MiB, 1 run, 1 s idle) for a
// smoke run. BENCH_ONLY=big,many runs a subset. BENCH_TMPDIR=<dir> puts the
// output files elsewhere (default: os.tmpdir()); they are deleted as soon as
// they are checked. BENCH_BINARY=<path> picks the binary. Only a default run
// replaces the shells section of bench/RESULTS.md (BENCH_WRITE=1 forces it).
//
// Event-loop delay: perf_hooks.monitorEventLoopDelay at 5 ms resolution, as in
// bench/monitor.mjs: "delay" is the sample minus the 5 ms interval. RSS growth
// = peak RSS (max of 20 ms samples and resourceUsage().maxRSS) minus RSS at the
// start of the measurement. Every output file is checked byte for byte against
// the expected text after the measurement (outside the timed window).
import { spawn } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'
import { probe } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'
import { stripAnsiJs } from './reference-monitor.mjs'
import { executeBackgroundReference } from './reference-shell.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')

const QUICK = process.env.BENCH_QUICK === '1'
const CFG = {
  bigBytes: envInt('BENCH_SHELL_BYTES', QUICK ? 128 * 2 ** 20 : 2 ** 30),
  runs: envInt('BENCH_SHELL_RUNS', QUICK ? 1 : 3),
  shellsN: envInt('BENCH_SHELLS_N', QUICK ? 20 : 100),
  eachBytes: envInt('BENCH_SHELLS_EACH_BYTES', QUICK ? 2 * 2 ** 20 : 10 * 2 ** 20),
  idleMs: envInt('BENCH_IDLE_MS', QUICK ? 1000 : 3000),
}
// monitorEventLoopDelay records nothing before its timer's first tick, so a
// block right after enable() would go unseen: the measured action starts
// this long after the probe.
const PROBE_WARMUP_MS = 25
const MiB = 2 ** 20

// (a) One 64-byte log line (63 bytes + LF): 13 bytes of SGR colour codes, so
// 1 GiB is exactly 2^24 lines and 51 bytes per line remain after stripping.
const ANSI_LINE_TEXT = ' 2026-11-21T02:49:21Z worker-07 request handled ok'
const ANSI_LINE = `\x1b[32mINFO\x1b[0m${ANSI_LINE_TEXT}`
const ANSI_LINE_PRINTF = `\\033[32mINFO\\033[0m${ANSI_LINE_TEXT}`
if (Buffer.byteLength(ANSI_LINE) !== 63) throw new Error(`ANSI_LINE is ${Buffer.byteLength(ANSI_LINE)} bytes, not 63`)
const bigCommand = () => `yes "$(printf '${ANSI_LINE_PRINTF}')" | head -c ${CFG.bigBytes}`

// (b) Each shell prints its own plain text line, so a mix-up between files shows.
const manyLine = (i) => `shell ${String(i).padStart(3, '0')}: plain text line of the concurrent background shells benchmark`
const manyCommand = (i) => `yes '${manyLine(i)}' | head -c ${CFG.eachBytes}`

// =============================================================== worker side

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))



/**
 * Checks the file at `path` byte for byte against `unit` repeated, cut to
 * `expectedSize`, followed by `tail`; counts ESC bytes and returns the first
 * lines. Reads in 8 MiB blocks, so 1 GiB takes a second or so.
 */
function verifyRepeating(path, unit, expectedSize, { tail = Buffer.alloc(0), sampleLines = 0 } = {}) {
  const size = statSync(path).size
  const block = 8 * MiB
  const reps = Math.ceil((block + unit.length) / unit.length) + 1
  const pattern = Buffer.alloc(reps * unit.length)
  for (let i = 0; i < reps; i++) unit.copy(pattern, i * unit.length)
  const bodySize = expectedSize - tail.length
  const buf = Buffer.allocUnsafe(block)
  const fd = openSync(path, 'r')
  let pos = 0
  let mismatchAt = -1
  let escBytes = 0
  let head = ''
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, block, pos)
      if (n === 0) break
      const chunk = buf.subarray(0, n)
      if (pos === 0 && sampleLines > 0) head = chunk.subarray(0, Math.min(n, 4096)).toString('utf8').split('\n').slice(0, sampleLines).join('\n')
      for (let i = chunk.indexOf(0x1b); i >= 0; i = chunk.indexOf(0x1b, i + 1)) escBytes++
      if (mismatchAt < 0) {
        // The body part of this chunk against the pattern, the rest against the tail.
        const bodyEnd = Math.max(0, Math.min(n, bodySize - pos))
        const off = pos % unit.length
        if (bodyEnd > 0 && !chunk.subarray(0, bodyEnd).equals(pattern.subarray(off, off + bodyEnd))) {
          for (let i = 0; i < bodyEnd; i++) if (chunk[i] !== pattern[off + i]) { mismatchAt = pos + i; break }
        }
        if (mismatchAt < 0 && bodyEnd < n) {
          const tStart = pos + bodyEnd - bodySize
          const rest = chunk.subarray(bodyEnd)
          if (!rest.equals(tail.subarray(tStart, tStart + rest.length))) mismatchAt = pos + bodyEnd
        }
      }
      pos += n
    }
  } finally {
    closeSync(fd)
  }
  const exact = size === expectedSize && mismatchAt < 0
  return { size, expectedSize, exact, mismatchAt, escBytes, head }
}

/** What the (a) output file must hold after ANSI stripping. */
function bigExpected() {
  const lines = Math.floor(CFG.bigBytes / 64)
  const rem = CFG.bigBytes % 64
  const unit = Buffer.from(`${stripAnsiJs(ANSI_LINE)}\n`)
  const tail = Buffer.from(stripAnsiJs(`${ANSI_LINE}\n`.slice(0, rem)))
  return { unit, tail, size: lines * unit.length + tail.length }
}

function verifyBig(path) {
  const e = bigExpected()
  return verifyRepeating(path, e.unit, e.size, { tail: e.tail, sampleLines: 3 })
}

function verifyMany(files) {
  // files: [{ i, path }]
  let exact = 0
  let escBytes = 0
  const bad = []
  for (const { i, path } of files) {
    const v = verifyRepeating(path, Buffer.from(`${manyLine(i)}\n`), CFG.eachBytes)
    escBytes += v.escBytes
    if (v.exact) exact++
    else bad.push(`#${i}: ${v.size} bytes, first difference at ${v.mismatchAt}`)
  }
  return { files: files.length, exact, escBytes, bad: bad.slice(0, 5) }
}

/** Kills the reference's detached process groups, however this worker ends. */
function killGroupsOnExit(children) {
  process.on('exit', () => {
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue
      try {
        process.kill(-c.pid, 'SIGKILL')
      } catch {}
    }
  })
}

/** Starts one shell with `kind`; resolves with `{ result, ms }` after done / close + finish. */
function starter(kind, dir) {
  if (kind === 'taskstream') {
    const ts = loadTaskstream()
    const registry = new ts.BackgroundShellRegistry()
    return (command, shellId) => {
      const handle = ts.executeBackground({ command, cwd: root, outputDir: dir, registry, shellId })
      return { outputPath: handle.outputPath, done: handle.done }
    }
  }
  const children = []
  killGroupsOnExit(children)
  return (command) => {
    const h = executeBackgroundReference({ command, cwd: root, outputDir: dir })
    children.push(h.child)
    return { outputPath: h.outputPath, done: h.done }
  }
}

const scenarios = {
  async idle() {
    const p = probe()
    await sleep(CFG.idleMs)
    return p.stop()
  },

  /**
   * (a) baselines: the same command redirected to a file (`kind` ''), or
   * piped through `cat` into it (`kind` 'cat': one more pipe hop and one more
   * busy process, as taskstream's reader adds, but no decoding or stripping),
   * started from Node like the others.
   */
  async redirect(kind, dir) {
    mkdirSync(dir, { recursive: true })
    const file = join(dir, 'redirect.output')
    const p = probe()
    await sleep(PROBE_WARMUP_MS)
    const t0 = performance.now()
    const child = spawn('bash', ['-c', `${bigCommand()}${kind === 'cat' ? ' | cat' : ''} > '${file}'`], { stdio: 'ignore' })
    process.on('exit', () => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'))
    const code = await new Promise((resolve, reject) => {
      child.on('error', reject)
      child.on('close', resolve)
    })
    const ms = performance.now() - t0
    const m = p.stop()
    if (code !== 0) throw new Error(`redirect exited ${code}`)
    const size = statSync(file).size
    rmSync(dir, { recursive: true, force: true })
    return { ...m, ms, size }
  },

  /** (a) one shell writing BENCH_SHELL_BYTES of coloured log lines. */
  async big(kind, dir) {
    const start = starter(kind, dir)
    await sleep(50)
    const p = probe()
    await sleep(PROBE_WARMUP_MS)
    const t0 = performance.now()
    const h = start(bigCommand(), 'big')
    const result = await h.done
    const ms = performance.now() - t0
    const m = p.stop()
    const verify = verifyBig(h.outputPath)
    rmSync(dir, { recursive: true, force: true })
    return { ...m, ms, result, verify }
  },

  /** (b) BENCH_SHELLS_N shells at once, each printing BENCH_SHELLS_EACH_BYTES. */
  async many(kind, dir) {
    const start = starter(kind, dir)
    await sleep(50)
    const p = probe()
    await sleep(PROBE_WARMUP_MS)
    const t0 = performance.now()
    const handles = []
    const startCalls = []
    for (let i = 0; i < CFG.shellsN; i++) {
      const c0 = performance.now()
      handles.push(start(manyCommand(i), `many-${i}`))
      startCalls.push(performance.now() - c0)
    }
    const startMs = performance.now() - t0
    const results = await Promise.all(handles.map((h) => h.done))
    const ms = performance.now() - t0
    const m = p.stop()
    const statuses = {}
    for (const r of results) {
      const s = r.status ?? (r.exitCode === 0 ? 'completed' : `exit ${r.exitCode ?? r.signal}`)
      statuses[s] = (statuses[s] ?? 0) + 1
    }
    const verify = verifyMany(handles.map((h, i) => ({ i, path: h.outputPath })))
    rmSync(dir, { recursive: true, force: true })
    return {
      ...m,
      ms,
      startMs,
      startCallsFirst: median(startCalls.slice(0, 10)),
      startCallsLast: median(startCalls.slice(-10)),
      statuses,
      bytesRead: results.reduce((a, r) => a + r.bytesRead, 0),
      bytesWritten: results.reduce((a, r) => a + r.bytesWritten, 0),
      verify,
    }
  },
}

// =============================================================== parent side

/** One measurement in a fresh Node process; its scratch directory, if any, is removed afterwards. */
async function worker(scenario, kind = '', dir = '') {
  try {
    return await spawnWorker(fileURLToPath(import.meta.url), scenario, kind, dir)
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}

/** `device mountpoint fstype` of the file system holding `path` (Linux), for the facts. */
function mountOf(path) {
  try {
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')).filter((f) => f.length > 2)
    const m = mounts.filter((f) => path === f[1] || path.startsWith(f[1].endsWith('/') ? f[1] : `${f[1]}/`)).sort((a, b) => b[1].length - a[1].length)[0]
    return m ? `${m[2]} on ${m[0]}` : 'unknown file system'
  } catch {
    return 'unknown file system'
  }
}

const f1 = (v) => (Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) : 'n/a')
const mib = (bytes) => bytes / MiB
const size = (bytes) => (bytes >= 2 ** 30 && bytes % 2 ** 30 === 0 ? `${bytes / 2 ** 30} GiB` : `${f1(mib(bytes))} MiB`)
/** How many times better taskstream is: >1 better, <1 worse. */
const lowerBetter = (ts, ref) => (ts > 0 ? `${f1(ref / ts)}×` : ref > 0 ? '∞' : '=')
const med = (runs, key) => median(runs.map((r) => (typeof key === 'function' ? key(r) : r[key])))
const range = (runs, key) => (runs.length > 1 ? ` (${f1(Math.min(...runs.map((r) => r[key])))}–${f1(Math.max(...runs.map((r) => r[key])))})` : '')

async function runParent() {
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null
  const want = (s) => !only || only.has(s)
  const quiet = await waitForQuiet()
  const facts = machineFacts()
  const started = performance.now()
  const tmpRoot = mkdtempSync(join(process.env.BENCH_TMPDIR || tmpdir(), 'taskstream-bench-shells-'))
  const cleanup = () => rmSync(tmpRoot, { recursive: true, force: true })
  process.on('exit', cleanup)
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
  console.log(`taskstream background-shell benchmark: ${binaryFacts()}`)
  console.log(`config: ${JSON.stringify(CFG)}; output files under ${tmpRoot}\n`)
  // Load check: fails fast if the release binary is missing.
  loadTaskstream()

  const R = {}
  const disturbedSteps = []
  let stepNo = 0
  const step = async (name, fn) => {
    const t = performance.now()
    const r = await undisturbed(name, () => fn(join(tmpRoot, `step-${stepNo++}`)))
    R[name] = r.value
    if (r.disturbed) disturbedSteps.push(name)
    process.stderr.write(`  ${name.padEnd(28)} ${((performance.now() - t) / 1000).toFixed(1)} s${r.attempts > 1 ? ` (${r.attempts} attempts)` : ''}\n`)
    return r.value
  }

  if (want('idle') || want('big')) await step('idle baseline', () => worker('idle'))
  const big = { redirect: [], cat: [], taskstream: [], reference: [] }
  if (want('big')) {
    for (let run = 1; run <= CFG.runs; run++) {
      big.redirect.push(await step(`big redirect #${run}`, (dir) => worker('redirect', '', dir)))
      big.cat.push(await step(`big | cat #${run}`, (dir) => worker('redirect', 'cat', dir)))
      big.taskstream.push(await step(`big taskstream #${run}`, (dir) => worker('big', 'taskstream', dir)))
      big.reference.push(await step(`big reference #${run}`, (dir) => worker('big', 'reference', dir)))
    }
  }
  if (want('many')) {
    await step('many taskstream', (dir) => worker('many', 'taskstream', dir))
    await step('many reference', (dir) => worker('many', 'reference', dir))
  }

  // ------------------------------------------------------------ table
  const rows = []
  const targets = []
  const notes = []
  const idle = R['idle baseline']
  if (idle) rows.push(['idle loop, nothing running: event-loop delay p99 (ms)', f1(idle.eldP99), '', ''])
  if (big.taskstream.length) {
    const T = big.taskstream
    const F = big.reference
    const B = big.redirect
    const C = big.cat
    const e = bigExpected()
    const n = CFG.runs
    const agg = n > 1 ? `median of ${n} runs` : '1 run'
    const wT = med(T, 'ms')
    const wR = med(F, 'ms')
    const wB = med(B, 'ms')
    const gib = size(CFG.bigBytes)
    const over = (runs) => med(runs, (r) => r.eldP99 - idle.eldP99)
    rows.push(
      [`(a) ${gib} of ANSI-coloured log lines: start → done / close+finish (ms, ${agg}; range)`, `${f1(wT)}${range(T, 'ms')}`, `${f1(wR)}${range(F, 'ms')}`, lowerBetter(wT, wR)],
      [`(a) … same command \`> file\` in the same temp dir (ms)`, `${f1(wB)}${range(B, 'ms')}`, '', ''],
      [`(a) … same command \`| cat > file\` (ms)`, `${f1(med(C, 'ms'))}${range(C, 'ms')}`, '', ''],
      ['(a) wall time / `cmd > file` (×)', `${f1(wT / wB)}×`, `${f1(wR / wB)}×`, ''],
      ['(a) throughput, raw bytes read (MiB/s)', f1(mib(CFG.bigBytes) / (wT / 1000)), f1(mib(CFG.bigBytes) / (wR / 1000)), lowerBetter(wT, wR)],
      ['(a) event-loop delay p99 (ms)', f1(med(T, 'eldP99')), f1(med(F, 'eldP99')), lowerBetter(med(T, 'eldP99'), med(F, 'eldP99'))],
      ['(a) event-loop delay p99 above the idle p99 (ms)', f1(over(T)), f1(over(F)), ''],
      ['(a) … contention only, no shell: event-loop delay p99 while `cmd > file` runs (ms)', f1(med(B, 'eldP99')), '', ''],
      ['(a) … contention only, no shell: event-loop delay p99 while `cmd | cat > file` runs (ms)', f1(med(C, 'eldP99')), '', ''],
      ['(a) event-loop delay max (ms)', f1(med(T, 'eldMax')), f1(med(F, 'eldMax')), lowerBetter(med(T, 'eldMax'), med(F, 'eldMax'))],
      ['(a) host RSS growth (MiB)', f1(mib(med(T, 'rssGrowthMax'))), f1(mib(med(F, 'rssGrowthMax'))), lowerBetter(med(T, 'rssGrowthMax'), med(F, 'rssGrowthMax'))],
      ['(a) JS main-thread CPU (ms, /proc schedstat)', f1(med(T, 'mainThreadCpuMs')), f1(med(F, 'mainThreadCpuMs')), lowerBetter(med(T, 'mainThreadCpuMs'), med(F, 'mainThreadCpuMs'))],
      ['(a) Node process CPU, all threads (ms, user+sys)', f1(med(T, 'cpuMs')), f1(med(F, 'cpuMs')), lowerBetter(med(T, 'cpuMs'), med(F, 'cpuMs'))],
      ['(a) … of which system time (ms)', f1(med(T, 'cpuSystemMs')), f1(med(F, 'cpuSystemMs')), ''],
      ['(a) … of which outside the JS thread: taskstream\'s Rust threads, libuv and V8 helpers (ms)', f1(med(T, (r) => r.cpuMs - r.mainThreadCpuMs)), f1(med(F, (r) => r.cpuMs - r.mainThreadCpuMs)), ''],
      ['(a) JS main thread runnable but waiting for a CPU (ms)', f1(med(T, 'mainThreadRunqueueMs')), f1(med(F, 'mainThreadRunqueueMs')), ''],
      ['(a) … same, contention only: `cmd > file` / `cmd | cat > file` (ms)', `${f1(med(B, 'mainThreadRunqueueMs'))} / ${f1(med(C, 'mainThreadRunqueueMs'))}`, '', ''],
      [
        `(a) output file: bytes (expected ${e.size}), byte-exact, ESC bytes`,
        `${T.map((r) => r.verify.size).join(', ')}; ${T.every((r) => r.verify.exact) ? 'exact' : 'DIFFERS'}; ${T.reduce((a, r) => a + r.verify.escBytes, 0)}`,
        `${F.map((r) => r.verify.size).join(', ')}; ${F.every((r) => r.verify.exact) ? 'exact' : 'DIFFERS'}; ${F.reduce((a, r) => a + r.verify.escBytes, 0)}`,
        '',
      ],
    )
    const firstLines = T[0].verify.head.split('\n')
    notes.push(`(a) first lines of the taskstream output file: ${firstLines.map((l) => `\`${l}\``).join(', ')}`)
    for (const [label, runs] of [['taskstream', T], ['reference', F]]) {
      for (const r of runs) {
        if (!r.verify.exact) notes.push(`(a) ${label}: output file differs from the expected text (size ${r.verify.size}, expected ${r.verify.expectedSize}, first difference at byte ${r.verify.mismatchAt})`)
      }
    }
    for (const r of T) {
      const x = r.result
      if (x.status !== 'completed' || x.bytesRead !== CFG.bigBytes || x.bytesWritten !== e.size || x.bytesNotWritten !== 0 || x.binaryDetected) {
        notes.push(`(a) taskstream done result unexpected: ${JSON.stringify(x)}`)
      }
    }
    for (const r of F) {
      if (r.result.exitCode !== 0 || r.result.bytesRead !== CFG.bigBytes) notes.push(`(a) reference result unexpected: ${JSON.stringify(r.result)}`)
    }
    const pT = over(T)
    const gT = mib(med(T, 'rssGrowthMax'))
    targets.push(
      ['(a) wall time ≤ 1.5× `cmd > file`', `${f1(wT / wB)}×`, wT / wB <= 1.5 ? 'met' : '**missed**'],
      ['(a) event-loop delay p99 within 1 ms of idle', `${f1(pT)} ms above idle (idle ${f1(idle.eldP99)} ms)`, pT <= 1 ? 'met' : '**missed**'],
      ['(a) host RSS growth < 16 MiB', `${f1(gT)} MiB`, gT < 16 ? 'met' : '**missed**'],
    )
    notes.push(`(a) per run, wall ms of taskstream / reference / \`> file\` / \`| cat > file\`: ${T.map((r, i) => `${f1(r.ms)} / ${f1(F[i].ms)} / ${f1(B[i].ms)} / ${f1(C[i].ms)}`).join('; ')}`)
    notes.push(`(a) per run, event-loop delay p99 ms (JS thread runnable-but-waiting ms) of taskstream / reference / \`> file\` / \`| cat > file\`: ${T.map((r, i) => [r, F[i], B[i], C[i]].map((x) => `${f1(x.eldP99)} (${f1(x.mainThreadRunqueueMs)})`).join(' / ')).join('; ')}`)
  }
  const mT = R['many taskstream']
  const mR = R['many reference']
  if (mT && mR) {
    const total = CFG.shellsN * CFG.eachBytes
    rows.push(
      [`(b) ${CFG.shellsN} shells at once, ${size(CFG.eachBytes)} each: start → all done (ms)`, f1(mT.ms), f1(mR.ms), lowerBetter(mT.ms, mR.ms)],
      ['(b) aggregate throughput (MiB/s)', f1(mib(total) / (mT.ms / 1000)), f1(mib(total) / (mR.ms / 1000)), lowerBetter(mT.ms, mR.ms)],
      [`(b) time to start all ${CFG.shellsN} (ms, JS thread blocked)`, f1(mT.startMs), f1(mR.startMs), lowerBetter(mT.startMs, mR.startMs)],
      ['(b) … one start call, median of the first 10 / of the last 10 (ms)', `${f1(mT.startCallsFirst)} / ${f1(mT.startCallsLast)}`, `${f1(mR.startCallsFirst)} / ${f1(mR.startCallsLast)}`, ''],
      ['(b) host RSS growth (MiB)', f1(mib(mT.rssGrowthMax)), f1(mib(mR.rssGrowthMax)), lowerBetter(mT.rssGrowthMax, mR.rssGrowthMax)],
      ['(b) longest event-loop stall (event-loop delay max, ms)', f1(mT.eldMax), f1(mR.eldMax), lowerBetter(mT.eldMax, mR.eldMax)],
      ['(b) JS main-thread CPU (ms, /proc schedstat)', f1(mT.mainThreadCpuMs), f1(mR.mainThreadCpuMs), lowerBetter(mT.mainThreadCpuMs, mR.mainThreadCpuMs)],
      ['(b) JS main thread runnable but waiting for a CPU (ms)', f1(mT.mainThreadRunqueueMs), f1(mR.mainThreadRunqueueMs), ''],
      ['(b) Node process CPU, all threads (ms, user+sys)', f1(mT.cpuMs), f1(mR.cpuMs), lowerBetter(mT.cpuMs, mR.cpuMs)],
      [
        `(b) output files byte-exact (of ${CFG.shellsN}); statuses`,
        `${mT.verify.exact}; ${Object.entries(mT.statuses).map(([k, v]) => `${v} ${k}`).join(', ')}`,
        `${mR.verify.exact}; ${Object.entries(mR.statuses).map(([k, v]) => `${v} ${k}`).join(', ')}`,
        '',
      ],
    )
    notes.push(
      `(b) the start loops differ in kind: taskstream drains the shells it has started at full speed on its own threads while the loop goes on, so each later start call competes with them for the ${facts.nproc} CPUs; the reference reads nothing until its synchronous loop returns, so its first shells block on full pipes and leave the CPUs to the spawning.`,
    )
    for (const [label, m] of [['taskstream', mT], ['reference', mR]]) {
      if (m.verify.bad.length) notes.push(`(b) ${label}: files that differ: ${m.verify.bad.join('; ')}`)
      if (m.bytesRead !== total) notes.push(`(b) ${label}: read ${m.bytesRead} bytes, expected ${total}`)
    }
  }

  const elapsed = ((performance.now() - started) / 1000).toFixed(0)
  const md = `## Background shells (\`bench/shells.mjs\`)

${factsMarkdown(facts, {
    Binary: binaryFacts(),
    Config: `\`${JSON.stringify(CFG)}\``,
    'Output files': `${tmpRoot} (${mountOf(tmpRoot)}), deleted after each check`,
    'Wall time': `${elapsed} s`,
    'Machine before the run': quiet,
    'Steps measured next to a cargo/rustc build (†)': disturbedSteps.length ? disturbedSteps.join(', ') : 'none (steps that met one were measured again)',
  })}

taskstream = \`executeBackground()\` with its own \`BackgroundShellRegistry\` (reader threads decode,
ANSI-strip and write; status sidecars written on register and settle); reference =
\`bench/reference-shell.mjs\`, the TypeScript background shell in plain JavaScript (spawn
\`bash -c\` detached, per-chunk \`toString('utf-8')\` + the strip-ansi regex + \`fs.WriteStream\`
writes in arrival order, done at close + finish). Each cell is a fresh Node process. **ratio** =
how many times better taskstream is (>1 better, <1 worse). (a) runs \`${bigCommand()}\`
(64-byte lines, 13 of them SGR codes); (b) runs \`yes '<shell i: own text line>' | head -c ${CFG.eachBytes}\`.
Event-loop delay = how late a 5 ms timer ran (monitorEventLoopDelay sample minus 5 ms). RSS growth =
peak RSS (20 ms samples and \`resourceUsage().maxRSS\`) minus RSS at the start. Output files are
compared byte for byte with the expected text after each run.

${table(['metric', 'taskstream', 'reference', 'ratio'], rows)}
${targets.length ? `\nThe issue's targets for taskstream:\n\n${table(['target', 'measured', ''], targets, ['l', 'r', 'l'])}\n` : ''}${notes.length ? `\n${notes.map((n) => `- ${n}`).join('\n')}\n` : ''}`
  console.log(md)
  const sizeVars = Object.keys(process.env).filter((n) => n.startsWith('BENCH_') && !['BENCH_WRITE', 'BENCH_TMPDIR'].includes(n))
  if (mayWriteResults(sizeVars)) {
    const path = writeSection('shells', md)
    console.log(`(written to ${path})`)
  } else console.log('(non-default run: bench/RESULTS.md left alone; BENCH_WRITE=1 writes it anyway)')
}

if (process.argv[2] === '--worker') await runWorker(scenarios[process.argv[3]], process.argv[4], process.argv[5])
else await runParent()
