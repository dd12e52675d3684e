// The signal lane's budget (API.md §6.7, issue 30): does the recommended setting
// (`RECOMMENDED_SIGNAL`) give the model every line that matters, for no more notifications,
// model text or screen rows than the default throttle? Default vs recommended side by side in
// one run, each scenario BENCH_BUDGET_RUNS [3] times (fresh Node process each), medians.
//
// Scenarios (bench/fixtures/):
//   chatty     chatty-server.sh: 2000 INFO lines over ~4 s, 10 ERROR lines spread through them
//   build      build-log.sh: 1200 compile lines, the error, its `-->`/`|` detail, the summary
//   crash      crash.sh: an INFO flood, a Python traceback (frames before the error line) in
//              the middle of a busy tick, then more INFO lines and exit 1
//   testwatch  test-watch.sh: three runs of 24 test files; in the second one a failure
//              followed by its assertion, expected, received and file:line
//   held       held-lines.sh: ~100 ERROR lines among INFO lines for ~15 s (latency of held lines)
// The lines that matter are each scenario's `matters` below: the matching lines and the
// lines that explain them. "Delivered" counts those that appear in a notification's lines
// (`meta.lines`, or an event's own line; a terminal notification's `meta.lines` too; digest
// quotes do not count). Model text: UTF-8 bytes of every notification's model text. Display
// rows: the rows of every display text (its `\n`-separated lines). Latency: from the stamped
// line's write to the notification that carries it.
// BENCH_BINARY=<path> picks the binary; a default run replaces the budget section of
// bench/RESULTS.md.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, percentile, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const RUNS = envInt('BENCH_BUDGET_RUNS', 3)
const fixture = (name) => `bash ${join(here, 'fixtures', name)}`

const chattyErrors = Array.from({ length: 10 }, (_, i) => `ERROR request ${i + 1} failed: upstream timeout after 3000 ms (GET /api/orders/${200 * i + 100})`)
const SCENARIOS = {
  chatty: { command: fixture('chatty-server.sh'), matters: chattyErrors },
  build: {
    command: fixture('build-log.sh'),
    matters: ['error[E0308]: mismatched types', '--> src/engine/plan.rs:1130:17', '|', 'error: could not compile `engine` (lib) due to 1 previous error; 12 warnings emitted'],
  },
  crash: {
    command: fixture('crash.sh'),
    matters: [
      'Traceback (most recent call last):',
      'File "/app/worker.py", line 88, in run',
      'result = handle(job)',
      'File "/app/worker.py", line 41, in handle',
      'return db.query(job.sql)',
      'psycopg2.OperationalError: could not connect to server: Connection refused',
    ],
  },
  testwatch: {
    command: fixture('test-watch.sh'),
    matters: [
      'FAIL  src/pricing.test.ts > pricing > applies the member discount',
      'AssertionError: expected 90 to be 85 // Object.is equality',
      '- Expected: 85',
      '+ Received: 90',
      '❯ src/pricing.test.ts:42:31',
    ],
  },
  held: { command: fixture('held-lines.sh'), matters: null, isError: (line) => /^ERROR held \d+/.test(line) },
}

/** Worker: one monitor of `scenario` with `setting`, start() to its terminal notification. */
async function measure(name, setting) {
  const scenario = SCENARIOS[name]
  const { MonitorRegistry, RECOMMENDED_SIGNAL } = loadTaskstream()
  const options = setting === 'recommended' ? { ...RECOMMENDED_SIGNAL } : {}
  const registry = new MonitorRegistry()
  const seen = []
  let resolveDone
  const done = new Promise((r) => (resolveDone = r))
  registry.setNotificationCallback((display, model, meta) => {
    seen.push({ display, model, meta, at: performance.timeOrigin + performance.now() })
    if (meta.type === 'terminal') resolveDone()
  })
  const stampDir = mkdtempSync(join(tmpdir(), 'budget-bench-'))
  const stampFile = join(stampDir, 'stamps')
  registry.start({ command: `STAMP_FILE=${stampFile} ${scenario.command}`, description: name, ...options })
  await done
  const stamps = new Map()
  try {
    for (const row of readFileSync(stampFile, 'utf8').split('\n').filter(Boolean)) {
      const space = row.indexOf(' ')
      stamps.set(row.slice(space + 1), Number(row.slice(0, space)) * 1000)
    }
  } catch {}
  rmSync(stampDir, { recursive: true, force: true })
  const linesOf = (n) => n.meta.lines ?? (n.meta.type === 'event' ? [n.display.slice(n.display.indexOf(': ') + 2).split('\n')[0]] : [])
  const delivered = new Set(seen.flatMap(linesOf))
  const matters = scenario.matters ?? [...stamps.keys()]
  const latencies = []
  for (const n of seen) {
    for (const line of linesOf(n)) if (stamps.has(line)) latencies.push(n.at - stamps.get(line))
  }
  return {
    matters: matters.length,
    delivered: matters.filter((line) => delivered.has(line)).length,
    notifications: seen.length,
    modelBytes: seen.reduce((a, n) => a + Buffer.byteLength(n.model), 0),
    displayRows: seen.reduce((a, n) => a + n.display.split('\n').length, 0),
    p99: latencies.length ? percentile(latencies, 99) : NaN,
    sample: seen.map((n) => n.display),
  }
}

async function runParent() {
  const facts = machineFacts()
  const quiet = await waitForQuiet()
  const script = fileURLToPath(import.meta.url)
  const runs = {}
  let disturbed = false
  for (let round = 0; round < RUNS; round++) {
    for (const name of Object.keys(SCENARIOS)) {
      for (const setting of ['default', 'recommended']) {
        process.stderr.write(`  ${name} / ${setting} (round ${round + 1}/${RUNS})…\n`)
        const run = await undisturbed(`${name} ${setting}`, () => spawnWorker(script, name, setting))
        disturbed ||= run.disturbed
        ;(runs[`${name}/${setting}`] ??= []).push(run.value)
      }
    }
  }
  const med = (key, field) => median(runs[key].map((r) => r[field]))
  const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '–')
  const rows = []
  const goals = []
  for (const name of Object.keys(SCENARIOS)) {
    const [d, r] = [`${name}/default`, `${name}/recommended`]
    const cell = (key, field) => fmt(med(key, field))
    rows.push([
      name,
      `${cell(d, 'delivered')}/${cell(d, 'matters')}`,
      `${cell(r, 'delivered')}/${cell(r, 'matters')}`,
      `${cell(d, 'notifications')} → ${cell(r, 'notifications')}`,
      `${fmt(med(d, 'modelBytes') / 1000, 1)} → ${fmt(med(r, 'modelBytes') / 1000, 1)} kB (${fmt(med(r, 'modelBytes') / med(d, 'modelBytes'), 2)}×)`,
      `${cell(d, 'displayRows')} → ${cell(r, 'displayRows')} (${fmt(med(r, 'displayRows') / med(d, 'displayRows'), 2)}×)`,
      `${fmt(med(r, 'p99'))} ms`,
    ])
    const all = runs[r].every((x) => x.delivered === x.matters)
    goals.push(
      `- ${name}: every line that matters in every run: ${all ? 'met' : '**not met**'}; notifications ≤ default: ${med(r, 'notifications') <= med(d, 'notifications') ? 'met' : '**not met**'}; model text ≤ 1.0×: ${med(r, 'modelBytes') <= med(d, 'modelBytes') ? 'met' : '**not met**'}; display rows ≤ 1.5×: ${med(r, 'displayRows') <= 1.5 * med(d, 'displayRows') ? 'met' : '**not met**'}; latency p99 ≤ 1050 ms: ${!(med(r, 'p99') > 1050) ? 'met' : '**not met**'}.`,
    )
  }
  const markdown = [
    '## Signal budget (`bench/budget.mjs`)',
    '',
    `API.md §6.7. Each scenario with no §6.7 option (\`default\`) and with \`RECOMMENDED_SIGNAL\` (\`recommended\`), ${RUNS} rounds, medians. The lines that matter are the error lines with the lines that explain them (bench/budget.mjs names them).`,
    '',
    factsMarkdown(facts, { 'Binary': binaryFacts(), 'Machine before the run': quiet }),
    '',
    table(['Scenario', 'Lines that matter, default', 'recommended', 'Notifications', 'Model text', 'Display rows', 'Latency p99 (recommended)'], rows),
    '',
    'Against the goals (recommended vs default, medians):',
    ...goals,
    '',
    'The recommended displays of the last round:',
    '',
    ...Object.keys(SCENARIOS).filter((n) => n !== 'held').flatMap((name) => [`${name}:`, '```', ...runs[`${name}/recommended`].at(-1).sample, '```']),
    disturbed ? '† a cargo/rustc build ran during this measurement.' : '',
  ].join('\n')
  console.log(markdown)
  if (mayWriteResults(['BENCH_BUDGET_RUNS']) && !disturbed) console.log(`\nwrote ${writeSection('budget', markdown)}`)
}

if (process.argv[2] === '--worker') await runWorker(measure, process.argv[3], process.argv[4])
else await runParent()
