// Shared reporting for the benchmarks: machine facts, Markdown tables, and
// bench/RESULTS.md, where each benchmark owns one section (replaced on rerun).
//
// BENCH_IGNORE_BUILDS=1 measures even on a busy machine (for smoke runs
// while builds run): no waiting for a quiet machine and no measuring again;
// steps that met a cargo/rustc build are still marked †, and such a run never
// writes bench/RESULTS.md.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, release, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const resultsPath = join(root, 'bench', 'RESULTS.md')

/** Running cargo/rustc processes (matched by executable name only), as `pid (name)`. */
export function runningBuilds() {
  if (process.platform === 'linux') {
    const found = []
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue
      try {
        const comm = readFileSync(`/proc/${name}/comm`, 'utf8').trim()
        if (comm === 'cargo' || comm === 'rustc') found.push(`${name} (${comm})`)
      } catch {}
    }
    return found
  }
  try {
    return execFileSync('pgrep', ['-x', 'cargo|rustc'], { encoding: 'utf8' }).split('\n').filter(Boolean)
  } catch {
    return []
  }
}

/**
 * Samples (every `everyMs`, and on each `tick()`) whether another build runs
 * while a benchmark runs: this 2-core machine is shared, and a build next to
 * a measurement makes it worthless.
 */
export function watchForBuilds(everyMs = 1000) {
  let samples = 0
  let busy = 0
  const tick = () => {
    samples++
    if (runningBuilds().length > 0) busy++
  }
  tick()
  const timer = setInterval(tick, everyMs)
  timer.unref()
  return {
    /** For synchronous benchmarks, whose event loop never runs the timer. */
    tick,
    /** Samples that saw a build so far. */
    seen: () => busy,
    stop() {
      clearInterval(timer)
      tick()
      return busy
    },
  }
}

/**
 * Runs `measure` (sync or async) until no other build was seen during it, at
 * most `attempts` times, waiting for a quiet machine before each retry.
 * Returns `{ value, attempts, disturbed }`.
 */
export async function undisturbed(label, measure, { attempts = 3, everyMs = 250, onTick } = {}) {
  if (ignoreBuilds()) attempts = 1
  let result
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (!ignoreBuilds() && (attempt > 1 || runningBuilds().length > 0)) await waitForQuiet()
    const watch = watchForBuilds(everyMs)
    onTick?.(watch.tick)
    const value = await measure()
    const disturbed = watch.stop() > 0
    result = { value, attempts: attempt, disturbed }
    if (!disturbed) break
    process.stderr.write(`  (${label}: a cargo/rustc build ran during the measurement${attempt < attempts ? ', measuring again' : ', giving up: marked †'})\n`)
  }
  return result
}

/** BENCH_IGNORE_BUILDS=1: measure at once, even next to a build (smoke runs). */
export const ignoreBuilds = () => process.env.BENCH_IGNORE_BUILDS === '1'

function cpuTimes() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const idle = f[3] + (f[4] ?? 0)
  return { idle, total: f.reduce((a, b) => a + b, 0) }
}

/**
 * This machine is shared: wait (up to `maxMs`) until no cargo/rustc runs and
 * the whole machine is less than `threshold` busy over one second, and say
 * what was seen.
 */
export async function waitForQuiet({ threshold = 0.25, maxMs = 180_000 } = {}) {
  if (process.platform !== 'linux') return 'not checked'
  if (ignoreBuilds()) return `not checked (BENCH_IGNORE_BUILDS=1; cargo/rustc running: ${runningBuilds().length})`
  const started = Date.now()
  let busy = 1
  let announced = false
  for (;;) {
    const a = cpuTimes()
    await new Promise((r) => setTimeout(r, 1000))
    const b = cpuTimes()
    busy = 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total)
    if (busy < threshold && runningBuilds().length === 0) break
    if (Date.now() - started > maxMs) return `${(busy * 100).toFixed(0)}% busy (gave up waiting for a quiet machine)`
    if (!announced) {
      process.stderr.write(`  waiting for a quiet machine (${(busy * 100).toFixed(0)}% of all CPUs busy, cargo/rustc: ${runningBuilds().length})…\n`)
      announced = true
    }
  }
  return `${(busy * 100).toFixed(0)}% busy in the second before the run${Date.now() - started > 1500 ? ` (waited ${((Date.now() - started) / 1000).toFixed(0)} s)` : ''}`
}

function gitState() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'Cargo.toml', 'Cargo.lock'], { cwd: root, encoding: 'utf8' }).trim()
    return dirty ? `${head} + uncommitted changes in src/` : head
  } catch {
    return 'unknown'
  }
}

export function machineFacts() {
  let nproc = String(availableParallelism())
  try {
    nproc = execFileSync('nproc', { encoding: 'utf8' }).trim()
  } catch {}
  let cpu = 'unknown'
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu
  } catch {}
  return {
    nproc,
    cpu,
    node: process.version,
    kernel: `${process.platform} ${release()}`,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    loadavg: loadavg().map((l) => l.toFixed(2)).join(' '),
    processes: existsSync('/proc') ? String(readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length) : 'unknown',
    source: gitState(),
    date: new Date().toISOString(),
  }
}

export function factsMarkdown(facts, extra = {}) {
  const rows = {
    'nproc': facts.nproc,
    'CPU': facts.cpu,
    'Memory': facts.memory,
    'Node': facts.node,
    'Kernel': facts.kernel,
    'Load average at start': facts.loadavg,
    'Processes on the machine at start': facts.processes,
    'Source': facts.source,
    'Date': facts.date,
    ...extra,
  }
  return Object.entries(rows)
    .map(([k, v]) => `- ${k}: ${v}`)
    .join('\n')
}

/** A Markdown table; cells are converted with String(). */
export function table(header, rows, align) {
  const al = align ?? header.map((_, i) => (i === 0 ? 'l' : 'r'))
  const sep = al.map((a) => (a === 'r' ? '---:' : a === 'c' ? ':---:' : '---'))
  const line = (cells) => `| ${cells.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`
  return [line(header), `|${sep.join('|')}|`, ...rows.map(line)].join('\n')
}

/**
 * Whether this run may replace its section of bench/RESULTS.md: only runs
 * with the default sizes and binary do (quick runs must not clobber real
 * results), unless BENCH_WRITE=1.
 */
export function mayWriteResults(envNames) {
  if (process.env.BENCH_WRITE === '1') return true
  return ![...envNames, 'BENCH_BINARY', 'BENCH_ONLY', 'BENCH_IGNORE_BUILDS'].some((n) => process.env[n] !== undefined && process.env[n] !== '')
}

/** Replaces (or appends) the section `name` of bench/RESULTS.md. */
export function writeSection(name, markdown) {
  const start = `<!-- ${name}:start -->`
  const end = `<!-- ${name}:end -->`
  let text = existsSync(resultsPath)
    ? readFileSync(resultsPath, 'utf8')
    : '# taskstream benchmark results\n\nWritten by `npm run bench` (`bench/guards.mjs`, `bench/monitor.mjs`); each section is replaced when its benchmark reruns. Numbers are from one machine and one run: compare ratios, not absolutes.\n'
  const block = `${start}\n${markdown.trim()}\n${end}`
  const i = text.indexOf(start)
  const j = text.indexOf(end)
  if (i >= 0 && j > i) text = text.slice(0, i) + block + text.slice(j + end.length)
  else text = `${text.trimEnd()}\n\n${block}\n`
  writeFileSync(resultsPath, text)
  return resultsPath
}

/** Median of numbers. */
export function median(values) {
  const s = [...values].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

export function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))
  return s[idx]
}

export const envInt = (name, def) => {
  const v = process.env[name]
  if (v === undefined || v === '') return def
  const n = Number(v)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${v}`)
  return n
}
