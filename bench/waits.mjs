// waitFor benchmark, one run, every measurement in a fresh Node
// process (`--worker <scenario>`):
//
//   firehose  `yes` under a native monitor for BENCH_WAIT_SECONDS [3] s, once
//             with no wait and once with a pending `waitFor({ match })` whose
//             regex never matches (the pattern searches runs of plain lines at
//             once; only a line it may match is built): JS-thread CPU (schedstat
//             of the main thread) and ingest, side by side.
//   latency   a monitor on `cat <fifo>`; 100 trials of: waitFor({ match:
//             '^mark-<i>$' }), then write `mark-<i>\n` into the FIFO; time from
//             the write to the promise's resolution (p50, p99, max).
//   many      100 monitors × 10 waits each (1000 pending), each monitor printing
//             line-1 … line-10: every wait must resolve `match` with its own
//             line, in line order per monitor; RSS growth of the 1000 waits.
//
// Results replace the `waits` section of bench/RESULTS.md (default sizes only).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { threadSched } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, percentile, table, writeSection } from './lib/report.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'

const script = fileURLToPath(import.meta.url)
const SECONDS = envInt('BENCH_WAIT_SECONDS', 3)
const TRIALS = envInt('BENCH_WAIT_TRIALS', 100)
const MONITORS = 100
const WAITS_PER_MONITOR = 10

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** `yes` for SECONDS s, with or without a pending wait: JS-thread CPU and bytes read. */
async function firehose(withWait) {
  const { MonitorRegistry } = loadTaskstream()
  const registry = new MonitorRegistry()
  const m = registry.start({ command: 'yes firehose-line-0123456789', idleTimeoutMs: 600_000 })
  let resolved = null
  if (withWait === 'wait') registry.waitFor(m.id, { match: 'this never appears' }).then((r) => (resolved = r))
  await sleep(200)
  const [js0] = threadSched(process.pid)
  const bytes0 = m.bytesRead
  const t0 = performance.now()
  await sleep(SECONDS * 1000)
  const [js1] = threadSched(process.pid)
  const seconds = (performance.now() - t0) / 1000
  const bytes = m.bytesRead - bytes0
  registry.abortAll({ notify: false })
  await sleep(50)
  return { jsCpuMs: js1 - js0, mbPerS: bytes / 1e6 / seconds, resolvedEarly: resolved !== null && resolved.reason !== 'exit' }
}

/** Write-to-resolution latency of a match, TRIALS times. */
async function latency() {
  const { MonitorRegistry } = loadTaskstream()
  const dir = mkdtempSync(join(tmpdir(), 'taskstream-bench-wait-'))
  const fifo = join(dir, 'lines')
  execFileSync('mkfifo', [fifo])
  const registry = new MonitorRegistry()
  const m = registry.start({ command: `cat ${fifo}`, idleTimeoutMs: 600_000 })
  const fd = openSync(fifo, 'w')
  const samples = []
  let wrong = 0
  for (let i = 0; i < TRIALS; i++) {
    const wait = registry.waitFor(m.id, { match: `^mark-${i}$`, timeoutMs: 10_000 })
    await sleep(5)
    const t0 = performance.now()
    writeSync(fd, `mark-${i}\n`)
    const r = await wait
    samples.push(performance.now() - t0)
    if (r.reason !== 'match' || r.line !== `mark-${i}`) wrong++
  }
  registry.abortAll({ notify: false })
  rmSync(dir, { recursive: true, force: true })
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), max: Math.max(...samples), wrong }
}

/** 1000 waits on 100 monitors: results, order, RSS. */
async function many() {
  const { MonitorRegistry } = loadTaskstream()
  const registry = new MonitorRegistry({ maxConcurrent: MONITORS })
  const command = `sleep 1.5; for j in $(seq 1 ${WAITS_PER_MONITOR}); do echo line-$j; sleep 0.01; done; sleep 30`
  const monitors = Array.from({ length: MONITORS }, () => registry.start({ command, idleTimeoutMs: 600_000 }))
  await sleep(100)
  globalThis.gc?.()
  const rss0 = process.memoryUsage().rss
  const order = new Map(monitors.map((m) => [m.id, []]))
  let wrong = 0
  const waits = []
  for (const m of monitors) {
    for (let j = 1; j <= WAITS_PER_MONITOR; j++) {
      waits.push(
        registry.waitFor(m.id, { match: `^line-${j}$`, timeoutMs: 30_000 }).then((r) => {
          if (r.reason !== 'match' || r.line !== `line-${j}`) wrong++
          order.get(m.id).push(j)
        }),
      )
    }
  }
  const rss1 = process.memoryUsage().rss
  const t0 = performance.now()
  await Promise.all(waits)
  const resolvedMs = performance.now() - t0
  const outOfOrder = [...order.values()].filter((js) => js.some((j, i) => j !== i + 1)).length
  registry.abortAll({ notify: false })
  return { waits: waits.length, wrong, outOfOrder, rssGrowthMiB: (rss1 - rss0) / 2 ** 20, resolvedMs }
}

const SCENARIOS = { firehose, latency, many }

if (process.argv[2] === '--worker') {
  await runWorker(SCENARIOS[process.argv[3]], ...process.argv.slice(4))
} else {
  const facts = machineFacts()
  console.log(`waits benchmark: ${binaryFacts()}`)
  const none = await spawnWorker(script, 'firehose', 'none')
  const wait = await spawnWorker(script, 'firehose', 'wait')
  const lat = await spawnWorker(script, 'latency')
  const lots = await spawnWorker(script, 'many')
  const rows = [
    ['JS-thread CPU over the window', `${none.jsCpuMs.toFixed(1)} ms`, `${wait.jsCpuMs.toFixed(1)} ms`],
    ['ingest', `${none.mbPerS.toFixed(0)} MB/s`, `${wait.mbPerS.toFixed(0)} MB/s`],
  ]
  const md = [
    '## waitFor (bench/waits.mjs)',
    '',
    factsMarkdown(facts, { Binary: binaryFacts() }),
    '',
    `### A wait on a firehose (\`yes\` under a monitor, ${SECONDS} s)`,
    '',
    'The wait\'s regex never matches. While it is pending the reader searches each run of plain lines with it at once and builds only a line it may match (and every line that is not plain); the others are counted as without a wait.',
    '',
    table(['', 'no wait', 'a pending `match` wait'], rows),
    '',
    `### Latency: the matching line written → the promise resolved (${TRIALS} trials, a monitor on \`cat <fifo>\`)`,
    '',
    table(['p50', 'p99', 'max', 'wrong results'], [[`${lat.p50.toFixed(2)} ms`, `${lat.p99.toFixed(2)} ms`, `${lat.max.toFixed(2)} ms`, lat.wrong]]),
    '',
    `### ${MONITORS * WAITS_PER_MONITOR} concurrent waits on ${MONITORS} monitors`,
    '',
    table(
      ['waits', 'wrong results', 'monitors out of order', 'RSS growth of the pending waits', 'all resolved after'],
      [[lots.waits, lots.wrong, lots.outOfOrder, `${lots.rssGrowthMiB.toFixed(1)} MiB`, `${lots.resolvedMs.toFixed(0)} ms`]],
    ),
  ].join('\n')
  console.log(md)
  if (mayWriteResults(['BENCH_WAIT_SECONDS', 'BENCH_WAIT_TRIALS'])) console.log(`\nwrote ${writeSection('waits', md)}`)
  void median
}
