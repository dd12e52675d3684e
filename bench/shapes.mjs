// Output-shape benchmark: four shapes of BENCH_SHAPE_BYTES of
// output each, every one run (a) as the producer alone piped into the
// simplest reader, `<producer> | cat > /dev/null` (the floor for any pipe
// reader), and (b) under a native monitor, `new MonitorRegistry().start()`
// with the default throttle, timed from start() to the terminal notification.
//
// Every monitor measurement runs in a fresh Node process (`--worker monitor
// <shape>`), so heap growth, JIT state and RSS of one run cannot leak into the
// next; the `| cat` floor runs from the parent through `bash -c`, its CPU (the
// whole pipeline: producer and cat) read from bash's `time` keyword.
//
// Shapes (each exactly BENCH_SHAPE_BYTES bytes [1 GiB = 2^30], cut by `head -c`):
//   plain    60-character lines: `yes '<60 chars>' | head -c N`
//   ansi     short SGR-coloured log lines: `yes $'\e[32mINFO\e[0m request handled in 12 ms' | head -c N`
//   oneline  one line, no newline at all: `head -c N /dev/zero | tr '\0' a`
//   redraws  `\r`-only progress frames, no newline at all:
//            `yes $'\rprogress 42% [==========>         ] 1234/5678' | tr -d '\n' | head -c N`
// Each shape runs BENCH_RUNS times [3], interleaved (cat, monitor, cat,
// monitor, …); the table shows medians and the notes list every run.
// BENCH_ONLY=plain,oneline runs a subset. BENCH_BINARY=<path> picks the
// binary. BENCH_IGNORE_BUILDS=1 measures even while builds run (smoke runs).
// Only a default run replaces the shapes section of bench/RESULTS.md
// (BENCH_WRITE=1 forces it).
//
// Wall time: the floor is timed around spawnSync('bash', ['-c', …]) and the
// monitor from start() to its terminal notification, so both include starting
// bash. Host CPU = the Node process's own user+system CPU over that window
// (process.cpuUsage(): the JS thread, taskstream's Rust reactor threads and
// Node's helpers), so it is the monitor's cost without the producer's. Every
// monitor run must read exactly BENCH_SHAPE_BYTES and complete with exit code 0.
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'
import { probe } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')

const CFG = {
  bytes: envInt('BENCH_SHAPE_BYTES', 2 ** 30),
  runs: envInt('BENCH_RUNS', 3),
}
const GOAL_WALL_RATIO = 1.3
const GOAL_HOST_CPU_S_PER_GIB = 0.5
// monitorEventLoopDelay records nothing before its timer's first tick: the
// measured action starts this long after the probe.
const PROBE_WARMUP_MS = 25
const GiB = 2 ** 30
const MiB = 2 ** 20

// The repeated units: the commands below spell the same text (checked on 1 MiB before measuring).
const PLAIN_LINE = 'firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN\n'
const ANSI_LINE = '\x1b[32mINFO\x1b[0m request handled in 12 ms\n'
const FRAME = '\rprogress 42% [==========>         ] 1234/5678'

/** The producers, as `bash -c` text, for `n` bytes. */
const SHAPES = {
  plain: {
    unit: PLAIN_LINE,
    what: `${PLAIN_LINE.length - 1}-character lines`,
    command: (n) => `yes 'firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN' | head -c ${n}`,
  },
  ansi: {
    unit: ANSI_LINE,
    what: `short SGR-coloured lines (${ANSI_LINE.length} bytes, 9 of them SGR codes)`,
    command: (n) => `yes $'\\e[32mINFO\\e[0m request handled in 12 ms' | head -c ${n}`,
  },
  oneline: {
    unit: 'a',
    what: 'one line, no newline',
    command: (n) => `head -c ${n} /dev/zero | tr '\\0' a`,
  },
  redraws: {
    unit: FRAME,
    what: `\`\\r\`-only progress frames (${FRAME.length} bytes each), no newline`,
    command: (n) => `yes $'\\rprogress 42% [==========>         ] 1234/5678' | tr -d '\\n' | head -c ${n}`,
  },
}

// =============================================================== worker side

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const scenarios = {
  /** (b) One native monitor on `shape`: start() → terminal notification. */
  async monitor(shape) {
    const ts = loadTaskstream()
    const reg = new ts.MonitorRegistry()
    let events = 0
    let onTerminal
    const terminal = new Promise((resolve) => (onTerminal = resolve))
    reg.setNotificationCallback((display, _model, meta) => {
      if (meta.status === 'running') events++
      else onTerminal({ at: performance.now(), status: meta.status, display })
    })
    await sleep(50)
    const p = probe()
    await sleep(PROBE_WARMUP_MS)
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const entry = reg.start({ command: SHAPES[shape].command(CFG.bytes), cwd: root, idleTimeoutMs: 600_000 })
    let timer
    const term = await Promise.race([
      terminal,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${shape}: no terminal notification after 220 s`)), 220_000))),
    ])
    clearTimeout(timer)
    const cpu = process.cpuUsage(cpu0)
    const ms = term.at - t0
    const m = p.stop()
    const result = {
      ...m,
      ms,
      hostCpuMs: (cpu.user + cpu.system) / 1000,
      hostUserMs: cpu.user / 1000,
      hostSystemMs: cpu.system / 1000,
      events,
      status: entry.status,
      exitCode: entry.exitCode,
      error: entry.error,
      bytesRead: entry.bytesRead,
      linesSeen: entry.linesSeen,
      droppedLines: entry.droppedLines,
      truncatedBytes: entry.truncatedBytes,
      terminal: term.display.length > 200 ? `${term.display.slice(0, 200)}…` : term.display,
    }
    reg.abortAll({ notify: false })
    return result
  },
}

// =============================================================== parent side

/** One measurement in a fresh Node process. */
const worker = (scenario, shape) => spawnWorker(fileURLToPath(import.meta.url), scenario, shape)

/**
 * (a) `<producer> | cat > /dev/null` through `bash -c`: wall ms around the
 * spawn, and the pipeline's real/user/system seconds from bash's `time`.
 */
function catFloor(shape) {
  const script = `TIMEFORMAT='TIME %3R %3U %3S'; time { ${SHAPES[shape].command(CFG.bytes)} | cat > /dev/null; } 2>/dev/null`
  const t0 = performance.now()
  const r = spawnSync('bash', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
  const ms = performance.now() - t0
  const line = (r.stderr ?? '').split('\n').find((l) => l.startsWith('TIME '))
  if (r.status !== 0 || !line) throw new Error(`${shape} | cat exited ${r.status ?? r.signal}: ${r.stderr}`)
  const [real, user, sys] = line.split(' ').slice(1).map(Number)
  return { ms, realMs: real * 1000, cpuMs: (user + sys) * 1000, userMs: user * 1000, sysMs: sys * 1000 }
}

/** Runs every wanted producer for 1 MiB and checks its output: its unit repeated, cut to length; newlines, escapes, carriage returns. */
function checkShapes(names) {
  const n = MiB
  const problems = []
  for (const name of names) {
    const r = spawnSync('bash', ['-c', SHAPES[name].command(n)], { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 2 * n })
    const out = r.stdout ?? Buffer.alloc(0)
    const count = (byte) => {
      let c = 0
      for (let i = out.indexOf(byte); i >= 0; i = out.indexOf(byte, i + 1)) c++
      return c
    }
    const lf = count(0x0a)
    const cr = count(0x0d)
    const esc = count(0x1b)
    const want = {
      plain: lf > 0 && cr === 0 && esc === 0,
      ansi: lf > 0 && cr === 0 && esc > 0,
      oneline: lf === 0 && cr === 0 && esc === 0,
      redraws: lf === 0 && cr > 0 && esc === 0,
    }[name]
    const unit = SHAPES[name].unit
    const expected = Buffer.from(unit.repeat(Math.ceil(n / unit.length))).subarray(0, n)
    if (r.status !== 0 || !out.equals(expected) || !want) problems.push(`${name}: exit ${r.status}, ${out.length} bytes (want ${n}), ${lf} LF, ${cr} CR, ${esc} ESC`)
  }
  if (problems.length) throw new Error(`a producer does not make its shape:\n${problems.join('\n')}`)
}

const f1 = (v) => (Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) : 'n/a')
const f3 = (v) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a')
const size = (bytes) => (bytes >= GiB && bytes % GiB === 0 ? `${bytes / GiB} GiB` : `${f1(bytes / MiB)} MiB`)
const med = (runs, key) => median(runs.map((r) => (typeof key === 'function' ? key(r) : r[key])))

async function runParent() {
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null
  const names = Object.keys(SHAPES).filter((s) => !only || only.has(s))
  if (only && [...only].some((s) => !SHAPES[s])) throw new Error(`BENCH_ONLY: unknown shape in ${process.env.BENCH_ONLY} (shapes: ${Object.keys(SHAPES).join(', ')})`)
  const quiet = await waitForQuiet()
  const facts = machineFacts()
  const started = performance.now()
  console.log(`taskstream output-shape benchmark: ${binaryFacts()}`)
  console.log(`config: ${JSON.stringify(CFG)}; shapes: ${names.join(', ')}\n`)
  // Load check: fails fast if the release binary is missing.
  loadTaskstream()
  checkShapes(names)

  const R = {}
  const disturbedSteps = []
  const step = async (name, fn) => {
    const t = performance.now()
    const r = await undisturbed(name, fn)
    R[name] = r.value
    if (r.disturbed) disturbedSteps.push(name)
    process.stderr.write(`  ${name.padEnd(28)} ${((performance.now() - t) / 1000).toFixed(1)} s${r.attempts > 1 ? ` (${r.attempts} attempts)` : ''}\n`)
    return r.value
  }

  const runs = {}
  for (const shape of names) {
    runs[shape] = { cat: [], monitor: [] }
    for (let run = 1; run <= CFG.runs; run++) {
      runs[shape].cat.push(await step(`${shape} | cat #${run}`, async () => catFloor(shape)))
      runs[shape].monitor.push(await step(`${shape} monitor #${run}`, () => worker('monitor', shape)))
    }
  }

  // ------------------------------------------------------------ tables
  const gib = CFG.bytes / GiB
  const agg = CFG.runs > 1 ? `median of ${CFG.runs} runs` : '1 run'
  const rows = []
  const targets = []
  const notes = []
  const verdict = (ok) => (ok ? 'met' : '**missed**')
  for (const shape of names) {
    const C = runs[shape].cat
    const M = runs[shape].monitor
    const catMs = med(C, 'ms')
    const monMs = med(M, 'ms')
    const ratio = med(M.map((m, i) => m.ms / C[i].ms), (x) => x)
    const hostPerGiB = med(M, (m) => m.hostCpuMs / 1000 / (m.bytesRead / GiB || gib))
    const mainPerGiB = med(M, (m) => m.mainThreadCpuMs / 1000 / (m.bytesRead / GiB || gib))
    const pipePerGiB = med(C, (c) => c.cpuMs / 1000 / gib)
    rows.push([
      `${shape}: ${SHAPES[shape].what}`,
      f1(catMs),
      f1(monMs),
      `${f1(ratio)}×`,
      f3(pipePerGiB),
      f3(hostPerGiB),
      f3(mainPerGiB),
      f1(med(M, 'eldP99')),
      f1(med(M, 'rssGrowthMax') / MiB),
      `${med(M, 'linesSeen')} / ${med(M, 'events')} / ${med(M, 'droppedLines')}`,
      med(M, 'truncatedBytes'),
    ])
    targets.push(
      [`${shape}: wall under a monitor ≤ ${GOAL_WALL_RATIO}× \`| cat\``, `${f1(ratio)}× (${f1(monMs)} vs ${f1(catMs)} ms)`, verdict(ratio <= GOAL_WALL_RATIO)],
      [`${shape}: host CPU ≤ ${GOAL_HOST_CPU_S_PER_GIB} s per GiB`, `${f3(hostPerGiB)} s/GiB`, verdict(hostPerGiB <= GOAL_HOST_CPU_S_PER_GIB)],
    )
    notes.push(
      `${shape} per run, wall ms \`| cat\` / monitor (ratio; host CPU s/GiB; pipeline CPU s of \`| cat\`): ${C.map((c, i) => `${f1(c.ms)} / ${f1(M[i].ms)} (${f1(M[i].ms / c.ms)}×; ${f3(M[i].hostCpuMs / 1000 / gib)}; ${f3(c.cpuMs / 1000)})`).join('; ')}`,
    )
    for (const m of M) {
      if (m.status !== 'completed' || m.exitCode !== 0 || m.bytesRead !== CFG.bytes) {
        notes.push(`${shape}: UNEXPECTED monitor result: status ${m.status}, exit ${m.exitCode}, error ${m.error ?? '-'}, ${m.bytesRead} bytes read of ${CFG.bytes}`)
      }
    }
    notes.push(`${shape} terminal notification (first run): \`${M[0].terminal.replace(/`/g, "'").replace(/\r/g, '\\r').replace(/\n/g, '⏎')}\``)
  }

  const elapsed = ((performance.now() - started) / 1000).toFixed(0)
  const md = `## Output shapes (\`bench/shapes.mjs\`)

${factsMarkdown(facts, { Binary: binaryFacts(), Config: `\`${JSON.stringify(CFG)}\``, 'Wall time': `${elapsed} s`, 'Machine before the run': quiet, 'Steps measured next to a cargo/rustc build (†)': disturbedSteps.length ? disturbedSteps.join(', ') : 'none (steps that met one were measured again)' })}

Each shape is exactly ${size(CFG.bytes)} of output, run as \`<producer> | cat > /dev/null\` through
\`bash -c\` (the floor for any pipe reader; its CPU is the whole pipeline's, from bash's \`time\`) and
under a native monitor (\`new MonitorRegistry().start({ command: <producer> })\`, default throttle,
a fresh Node process each run), timed from start() to the terminal notification. **host CPU** = the
Node process's own user+system CPU over that window (JS thread, taskstream's Rust reactor threads
and Node's helpers): the monitor's cost without the producer's. JS-thread CPU is the main thread's
(/proc schedstat). Cells are the ${agg}, interleaved (cat, monitor, cat, monitor, …);
**monitor / cat** is the median of the per-run ratios (each monitor run against the \`| cat\` run
right before it). Producers:
${names.map((s) => `\`${SHAPES[s].command(CFG.bytes)}\``).join(', ')}.

${table(
    [
      'shape',
      '`| cat` wall (ms)',
      'monitor wall (ms)',
      'monitor / cat',
      '`| cat` pipeline CPU (s/GiB)',
      'host CPU (s/GiB)',
      'of which JS thread (s/GiB)',
      'event-loop delay p99 (ms)',
      'host RSS growth (MiB)',
      'lines seen / events / dropped',
      'bytes cut from long lines',
    ],
    rows,
  )}

The issue's goals:

${table(['goal', 'measured', ''], targets, ['l', 'r', 'l'])}

${notes.map((n) => `- ${n}`).join('\n')}
`
  console.log(md)
  const sizeVars = Object.keys(process.env).filter((n) => n.startsWith('BENCH_') && !['BENCH_WRITE'].includes(n))
  if (mayWriteResults(sizeVars)) {
    const path = writeSection('shapes', md)
    console.log(`(written to ${path})`)
  } else console.log('(non-default run: bench/RESULTS.md left alone; BENCH_WRITE=1 writes it anyway)')
}

if (process.argv[2] === '--worker') await runWorker(scenarios[process.argv[3]], process.argv[4])
else await runParent()
