// Persisted tasks (docs/persistence.md, issue 33): what a keeper costs, beside a plain start in
// the same run, BENCH_PERSIST_RUNS [15] rounds of each, alternating.
//
//   start       executeBackground() / MonitorRegistry.start() on `sleep 30`, from the call to its
//               return: a plain one (spawned contained, no keeper), and a persisted one (the
//               keeper executable started, its task spawned, its handshake read back).
//   keeper RSS  VmRSS of each persisted task's keeper process (its pid from <id>.task.json),
//               read once its start returned.
// The goals: a keeper of a persisted `sleep` at most 5 MB of RSS (the `node` keeper it
// replaced: 44.7 MB), a persisted start's handshake within 10 ms median (was about 100 ms).
// Linux only (RSS from /proc). BENCH_BINARY=<path> picks the binary (its taskstream-keeper
// beside it); a default run replaces the persistence section of bench/RESULTS.md.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, waitForQuiet, writeSection } from './lib/report.mjs'

if (process.platform !== 'linux') {
  console.log('bench/persist: Linux only (keeper RSS from /proc)')
  process.exit(0)
}

const RUNS = envInt('BENCH_PERSIST_RUNS', 15)
const { MonitorRegistry, BackgroundShellRegistry, executeBackground } = loadTaskstream()

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-bench-persist-'))
const stateDir = join(scratch, 'state')
const outputDir = join(scratch, 'out')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const rssKb = (pid) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
const keeperOf = (id) => JSON.parse(readFileSync(join(stateDir, `${id}.task.json`), 'utf8')).keeper.pid

const shells = new BackgroundShellRegistry()
const monitors = new MonitorRegistry()

async function shellStart(persisted) {
  const started = performance.now()
  const handle = executeBackground({
    command: 'sleep 30',
    cwd: scratch,
    outputDir,
    registry: shells,
    ...(persisted ? { persist: { stateDir } } : {}),
  })
  const ms = performance.now() - started
  const rss = persisted ? rssKb(keeperOf(handle.shellId)) : undefined
  shells.requestCancel(handle.shellId)
  await handle.done
  return { ms, rss }
}

async function monitorStart(persisted) {
  const started = performance.now()
  const entry = monitors.start({ command: 'sleep 30', ...(persisted ? { persist: { stateDir } } : {}) })
  const ms = performance.now() - started
  const rss = persisted ? rssKb(keeperOf(entry.monitorId)) : undefined
  monitors.cancel(entry.monitorId)
  await monitors.waitFor(entry.monitorId)
  return { ms, rss }
}

const facts = machineFacts()
const quiet = await waitForQuiet()
const results = {}
for (const [kind, start] of [['background shell', shellStart], ['monitor', monitorStart]]) {
  for (const persisted of [false, true]) results[`${kind}, ${persisted ? 'persisted' : 'plain'}`] = { ms: [], rss: [] }
  // A warm-up of each, then the rounds, plain and persisted alternating.
  await start(false)
  await start(true)
  for (let i = 0; i < RUNS; i++) {
    for (const persisted of [false, true]) {
      const { ms, rss } = await start(persisted)
      const row = results[`${kind}, ${persisted ? 'persisted' : 'plain'}`]
      row.ms.push(ms)
      if (rss !== undefined) row.rss.push(rss)
      await sleep(20)
    }
  }
}
rmSync(scratch, { recursive: true, force: true })

const rows = Object.entries(results).map(([name, { ms, rss }]) => [
  name,
  `${median(ms).toFixed(2)} ms`,
  `${Math.max(...ms).toFixed(2)} ms`,
  rss.length ? `${(median(rss) / 1024).toFixed(1)} MB` : '–',
  rss.length ? `${(Math.max(...rss) / 1024).toFixed(1)} MB` : '–',
])
for (const row of rows) console.log(row.join('  '))
const ratio = (kind) => median(results[`${kind}, persisted`].ms) / median(results[`${kind}, plain`].ms)

const markdown = [
  '## Persisted tasks (`bench/persist.mjs`)',
  '',
  `docs/persistence.md: a start on \`sleep 30\` from the call to its return, plain and persisted alternating, ${RUNS} rounds each; a persisted start includes the keeper executable's start and its handshake. The keeper's RSS is read from /proc once its start returned. Goals (issue 33): a keeper at most 5 MB of RSS, a persisted start within 10 ms median. The \`node\` keeper this replaced: 44.7 MB of RSS, a start of about 100 ms.`,
  '',
  factsMarkdown(facts, { Binary: binaryFacts(), 'Machine before the run': quiet }),
  '',
  table(['Start', 'Median', 'Max', 'Keeper RSS (median)', 'Keeper RSS (max)'], rows),
  '',
  `A persisted start costs ${ratio('background shell').toFixed(1)}× a plain one for a background shell and ${ratio('monitor').toFixed(1)}× for a monitor.`,
].join('\n')
console.log(`\n${markdown}`)
if (mayWriteResults(['BENCH_PERSIST_RUNS'])) console.log(`\nwrote ${writeSection('persist', markdown)}`)
process.exit(0)
