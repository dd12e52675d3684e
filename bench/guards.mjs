// Guards benchmark: every exported shell-command guard and text sanitiser on
// adversarial inputs of 1 MiB (runs of &, quotes, backslashes, nested $(,
// "# " runs, ESC runs, unterminated OSC, ...), in ms per MiB (median of a few
// runs), next to the naive JavaScript regex equivalents where one exists
// (the strip-ansi 7.2 regex, the TypeScript sanitizeMonitorLine).
//
// Superlinear behaviour is what this looks for, so each cell is measured at
// 16 KiB, 64 KiB, 256 KiB and then 1 MiB, and escalation stops once the next
// size is projected past the per-cell budget; such a cell is extrapolated
// from the measured growth and marked `~`. The "×" column is the growth over
// the last 4× step, t(1 MiB) / t(256 KiB): about 4 for linear work, about 16
// for quadratic.
//
//   node bench/guards.mjs
//   BENCH_GUARD_BUDGET_MS=2000  per-cell time budget (default 2000)
//   BENCH_GUARD_RUNS=5          runs per size; the median is reported
//   BENCH_GUARD_MAX_KIB=1024    largest input (KiB); 256 for a quick run
//   BENCH_BINARY=<path>         another taskstream binary (default: bench/.build release)
// Only a default run replaces the guards section of bench/RESULTS.md
// (BENCH_WRITE=1 forces it).
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, undisturbed, waitForQuiet, median, table, writeSection } from './lib/report.mjs'
import { sanitizeMonitorLineJs, stripAnsiJs } from './reference-monitor.mjs'

const ts = loadTaskstream()
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const BUDGET_MS = envInt('BENCH_GUARD_BUDGET_MS', 2000)
const RUNS = envInt('BENCH_GUARD_RUNS', 5)
const MAX = envInt('BENCH_GUARD_MAX_KIB', 1024) * 1024
const MIB = 1024 * 1024
const SIZES = [16, 64, 256, 1024].map((k) => k * 1024).filter((s) => s <= MAX)

const rep = (unit, n) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n)

/** name -> (size in UTF-16 units) => input */
const INPUTS = {
  'plain command text': (n) => rep('npm run build -- --watch; ', n),
  '&&&&…': (n) => rep('&', n),
  'a & a & …': (n) => rep('a & ', n),
  "''''…": (n) => rep("'", n),
  '""""…': (n) => rep('"', n),
  '\\\\\\\\…': (n) => rep('\\', n),
  '\\\\\\\\…\\& (one &)': (n) => `${rep('\\', n - 1)}&`,
  '$($($(…': (n) => rep('$(', n),
  '"$("$(…': (n) => rep('"$(', n),
  '````…': (n) => rep('`', n),
  '# # # …': (n) => rep('# ', n),
  '#c⏎#c⏎…': (n) => rep('#c\n', n),
  'A=1 A=1 … (env tokens)': (n) => rep('A=1 ', n),
  'bash -c bash -c …': (n) => rep('bash -c ', n),
  'sleep 5; sleep 5; …': (n) => rep('sleep 5; ', n),
  'ESC ESC ESC …': (n) => rep('\x1b', n),
  'ESC[ ESC[ …': (n) => rep('\x1b[', n),
  'ESC] ESC] … (OSC starts)': (n) => rep('\x1b]', n),
  'ESC] + text (unterminated OSC)': (n) => `\x1b]${rep('a', n - 2)}`,
  'ESC[1;1;1;… (long params)': (n) => `\x1b[${rep('1;', n - 2)}`,
  '<result><result>…': (n) => rep('<result>', n),
  'NUL/C0 controls': (n) => rep('\x00\x01\x1f', n),
}

const ctx = { workspaceDirs: [root] }
const GUARDS = [
  ['detectBlockedSleepPattern', 'sleepPat', (s) => ts.detectBlockedSleepPattern(s)],
  ['blockedSleepMessage', 'sleepMsg', (s) => ts.blockedSleepMessage(s)],
  ['stripTrailingBackgroundAmp', 'stripAmp', (s) => ts.stripTrailingBackgroundAmp(s)],
  ['trimTrailingShellComment', 'trimCmt', (s) => ts.trimTrailingShellComment(s)],
  ['stripShellWrapper', 'stripWrap', (s) => ts.stripShellWrapper(s)],
  ['hasTopLevelTrailingBackgroundOperator', 'trailAmp', (s) => ts.hasTopLevelTrailingBackgroundOperator(s)],
  ['hasNonFinalTopLevelBackgroundOperator', 'nonFinAmp', (s) => ts.hasNonFinalTopLevelBackgroundOperator(s)],
  ['detectCommandSubstitution', 'cmdSubst', (s) => ts.detectCommandSubstitution(s)],
  ['normalizeMonitorCommand', 'normalize', (s) => ts.normalizeMonitorCommand(s)],
  ['validateMonitorParams', 'validate', (s) => ts.validateMonitorParams({ command: s }, ctx)],
  ['sanitizeMonitorLine', 'sanitize', (s) => ts.sanitizeMonitorLine(s)],
  ['stripAnsi', 'stripAnsi', (s) => ts.stripAnsi(s)],
]
const JS_EQUIVALENTS = [
  ['stripAnsi', 'strip-ansi 7.2 regex (JS)', stripAnsiJs],
  ['sanitizeMonitorLine', 'TS sanitizeMonitorLine (JS)', sanitizeMonitorLineJs],
]

let sink = 0
function timeOnce(fn, input) {
  const t = performance.now()
  const r = fn(input)
  const dt = performance.now() - t
  sink ^= typeof r === 'string' ? r.length : r ? 1 : 0
  return dt
}
function timeMedian(fn, input) {
  const times = []
  let spent = 0
  while (times.length < RUNS && (times.length === 0 || spent < 1000)) {
    const dt = timeOnce(fn, input)
    times.push(dt)
    spent += dt
  }
  return median(times)
}

/** Escalating measurement of one (function, input) cell. */
function measureCell(fn, make) {
  fn(make(64)) // warm-up
  const points = [] // [size, ms]
  for (const size of SIZES) {
    if (points.length > 0) {
      const [s1, t1] = points[points.length - 1]
      const e = exponentOf(points) ?? 2
      const projected = t1 * (size / s1) ** Math.max(1, e)
      if (projected > BUDGET_MS) break
    }
    points.push([size, timeMedian(fn, make(size))])
  }
  const [sLast, tLast] = points[points.length - 1]
  const e = exponentOf(points)
  const measured = sLast === MAX
  const msPerMiB = measured ? (tLast * MIB) / MAX : tLast * (MIB / sLast) ** Math.max(1, e ?? 2)
  const growth = points.length >= 2 ? points[points.length - 1][1] / points[points.length - 2][1] : NaN
  return { msPerMiB, extrapolated: !measured || MAX !== MIB, growth, exponent: e, points }
}
function exponentOf(points) {
  if (points.length < 2) return undefined
  const [s0, t0] = points[points.length - 2]
  const [s1, t1] = points[points.length - 1]
  if (t0 < 0.2 || t1 < 0.2) return 1 // too small to tell: treat as linear
  return Math.min(3, Math.max(0, Math.log(t1 / t0) / Math.log(s1 / s0)))
}

const fmtMs = (cell) => {
  const v = cell.msPerMiB
  const s = v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)
  return cell.extrapolated ? `~${s}` : s
}
const fmtGrowth = (cell) => (Number.isFinite(cell.growth) ? `×${cell.growth.toFixed(1)}` : '')

// ---------------------------------------------------------------- run

const quiet = await waitForQuiet()
const started = performance.now()
const facts = machineFacts()
console.log(`taskstream guards benchmark: ${binaryFacts()}`)
console.log(`sizes ${SIZES.map((s) => `${s / 1024} KiB`).join(', ')}; budget ${BUDGET_MS} ms per cell; median of ≤${RUNS} runs\n`)

// Equivalence check of the JS side (so the ratio compares like with like).
const mismatches = []
for (const [nativeName, jsName, jsFn] of JS_EQUIVALENTS) {
  const nativeFn = GUARDS.find((g) => g[0] === nativeName)[2]
  for (const [inputName, make] of Object.entries(INPUTS)) {
    const x = make(4096)
    if (nativeFn(x) !== jsFn(x)) mismatches.push(`${jsName} differs from ${nativeName} on ${inputName}`)
  }
}

// Each row is measured again (up to 3 times) if a cargo/rustc build ran
// next to it; rows that never got a quiet run are marked † in the report.
const disturbedRows = []
async function measureRow(label, fn) {
  const t = performance.now()
  let tick = () => {}
  const r = await undisturbed(
    label,
    () => {
      const row = {}
      for (const [inputName, make] of Object.entries(INPUTS)) {
        row[inputName] = measureCell(fn, make)
        tick()
      }
      return row
    },
    { onTick: (f) => (tick = f) },
  )
  if (r.disturbed) disturbedRows.push(label)
  process.stderr.write(`  ${label.padEnd(40)} ${((performance.now() - t) / 1000).toFixed(1)} s${r.attempts > 1 ? ` (${r.attempts} attempts)` : ''}\n`)
  return r.value
}
const results = {} // guard -> input -> cell
for (const [name, , fn] of GUARDS) results[name] = await measureRow(name, fn)
const jsResults = {}
for (const [, jsName, fn] of JS_EQUIVALENTS) jsResults[jsName] = await measureRow(jsName, fn)

// ---------------------------------------------------------------- report

const inputNames = Object.keys(INPUTS)
const dag = (name) => (disturbedRows.includes(name) ? `${name} †` : name)
const summaryRows = GUARDS.map(([name]) => {
  const cells = results[name]
  const plain = cells['plain command text']
  const [worstName, worst] = Object.entries(cells).sort((a, b) => b[1].msPerMiB - a[1].msPerMiB)[0]
  return [dag(name), fmtMs(plain), worstName, fmtMs(worst), `${(worst.msPerMiB / plain.msPerMiB).toFixed(1)}`, fmtGrowth(worst)]
})
const summary = table(['guard', 'plain text ms/MiB', 'worst input', 'worst ms/MiB', 'worst / plain', '× per 4× size'], summaryRows, [
  'l',
  'r',
  'l',
  'r',
  'r',
  'r',
])

const matrix = table(
  ['input (1 MiB)', ...GUARDS.map((g) => g[1])],
  inputNames.map((inputName) => [inputName, ...GUARDS.map(([name]) => fmtMs(results[name][inputName]))]),
)

const sideBySide = table(
  ['input (1 MiB)', 'stripAnsi native', 'strip-ansi regex (JS)', 'JS / native', 'sanitizeMonitorLine native', 'TS sanitizeMonitorLine (JS)', 'JS / native'],
  inputNames.map((inputName) => {
    const a = results.stripAnsi[inputName]
    const aj = jsResults['strip-ansi 7.2 regex (JS)'][inputName]
    const b = results.sanitizeMonitorLine[inputName]
    const bj = jsResults['TS sanitizeMonitorLine (JS)'][inputName]
    return [
      inputName,
      `${fmtMs(a)} ${fmtGrowth(a)}`,
      `${fmtMs(aj)} ${fmtGrowth(aj)}`,
      (aj.msPerMiB / a.msPerMiB).toFixed(1),
      `${fmtMs(b)} ${fmtGrowth(b)}`,
      `${fmtMs(bj)} ${fmtGrowth(bj)}`,
      (bj.msPerMiB / b.msPerMiB).toFixed(1),
    ]
  }),
)

const legend = GUARDS.map(([name, abbr]) => `\`${abbr}\` = ${name}`).join(', ')
// A growth above 8× over one 4× step is either superlinear work or noise (a
// GC or a scheduler hiccup in one run): confirm it one step further, at 4×
// the size, before reporting it.
const superlinear = []
const notConfirmed = []
const confirm = (fn, make, cell) => {
  const [s1, t1] = cell.points[cell.points.length - 1]
  if (t1 * 16 > BUDGET_MS * 4) return { confirmed: true, growth: cell.growth }
  const t0 = timeMedian(fn, make(s1))
  const t2 = timeMedian(fn, make(s1 * 4))
  return { confirmed: t2 / t0 > 8, growth: t2 / t0, size: s1 * 4 }
}
for (const [name, , fn] of GUARDS)
  for (const inputName of inputNames) {
    const c = results[name][inputName]
    if (c.extrapolated && MAX === MIB) superlinear.push(`${name} on "${inputName}" (did not reach 1 MiB within ${BUDGET_MS} ms)`)
    else if (c.growth > 8) {
      const k = confirm(fn, INPUTS[inputName], c)
      const what = `${name} on "${inputName}": ×${c.growth.toFixed(1)} over the last step, then ×${k.growth.toFixed(1)} from ${c.points[c.points.length - 1][0] / 1024} to ${(k.size ?? 0) / 1024} KiB`
      if (k.confirmed) superlinear.push(what)
      else notConfirmed.push(what)
    }
  }

const jsSuperlinear = []
for (const [, jsName] of JS_EQUIVALENTS)
  for (const inputName of inputNames) {
    const c = jsResults[jsName][inputName]
    if (c.extrapolated && MAX === MIB) jsSuperlinear.push(`${jsName} on "${inputName}": ~${(c.msPerMiB / 1000).toFixed(0)} s per MiB (extrapolated from ${c.points.map(([sz, t]) => `${sz / 1024} KiB: ${t.toFixed(0)} ms`).join(', ')}, ${c.exponent === undefined ? 'growth assumed quadratic' : `growth exponent ${c.exponent.toFixed(1)}`})`)
  }

const elapsed = ((performance.now() - started) / 1000).toFixed(0)
const md = `## Guards (\`bench/guards.mjs\`)

${factsMarkdown(facts, { Binary: binaryFacts(), 'Budget per cell': `${BUDGET_MS} ms`, 'Runs per size': `median of ≤${RUNS}`, 'Wall time': `${elapsed} s`, 'Machine before the run': quiet, 'Rows measured next to a cargo/rustc build (†)': disturbedRows.length ? disturbedRows.join(', ') : 'none (rows that met one were measured again)' })}

Milliseconds per MiB of input (one call on a 1 MiB string, JS→Rust conversion included).
\`~\` = did not fit the per-cell budget at 1 MiB, extrapolated from the measured growth;
\`×\` = t(1 MiB) / t(256 KiB), about 4 for linear work and 16 for quadratic.

### Summary per guard

${summary}

### Superlinear cells

${superlinear.length ? superlinear.map((s) => `- ${s}`).join('\n') : '- none: every native guard scaled linearly on every input'}
${jsSuperlinear.length ? `\nNaive JavaScript equivalents that did not reach 1 MiB within the budget:\n${jsSuperlinear.map((s) => `- ${s}`).join('\n')}\n` : ''}${notConfirmed.length ? `\nGrowth spikes that a re-measurement at 4× the size did not confirm (noise, not superlinear work):\n${notConfirmed.map((s) => `- ${s}`).join('\n')}\n` : ''}
### Native vs naive JavaScript

${sideBySide}
${mismatches.length ? `\nJS equivalence check (4 KiB inputs) found differences, so those ratios compare different outputs:\n${mismatches.map((m) => `- ${m}`).join('\n')}\n` : '\nThe JS equivalents gave the same output as the native functions on every input (4 KiB check).\n'}
### Every guard on every input (ms/MiB)

${legend}.

${matrix}
`

console.log(md)
if (mayWriteResults(['BENCH_GUARD_BUDGET_MS', 'BENCH_GUARD_RUNS', 'BENCH_GUARD_MAX_KIB'])) {
  const path = writeSection('guards', md)
  writeFileSync(join(root, 'bench', `results-guards.json`), JSON.stringify({ facts, results, jsResults, mismatches }, null, 1))
  console.log(`(written to ${path}; sink ${sink & 1})`)
} else console.log(`(non-default run: bench/RESULTS.md left alone; BENCH_WRITE=1 writes it anyway; sink ${sink & 1})`)
