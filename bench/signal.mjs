// Signal per token (API.md §6.7): what reaches the model from
// replayable outputs, each under a native monitor with today's defaults and
// with the recommended agent setting, side by side in one run.
//
// Scenarios (bench/fixtures/):
//   chatty    chatty-server.sh: 2000 INFO lines over ~4 s (50 every 100 ms) with
//             10 `ERROR request … failed` lines spread through them
//   build     build-log.sh: 1200 compile lines over ~2.4 s, a warning every 100
//             lines, one `error[E0308]` near the end and the final
//             `error: could not compile …` (exit 1)
//   held      held-lines.sh: 10 INFO lines every 50 ms for ~15 s (the bucket is
//             always spent) with an `ERROR held <k>` line in about one tick of
//             three (about 100): the latency of held lines
//   firehose  `yes <60-char line>` for BENCH_SIGNAL_FIREHOSE_MS [3000], then cancel()
// Settings:
//   default      no §6.7 option (the TypeScript registry's texts and throttle)
//   recommended  RECOMMENDED_SIGNAL, the addon's export (API.md §6.7)
//   unbatched    the recommended setting without batchMs (held scenario only): a
//                notification with meta.lines is exactly one of held lines
//   batch        batchMs 200 alone (firehose only: keeps the counting fast path)
// The registry's throttle is the default one (burst 5, one token per second).
//
// Every run is a fresh Node process (`--worker <scenario> <setting>`), timed
// from start() to the terminal notification. Reported per run: error lines
// that reached the model (in a delivered event: a line of `meta.lines` or the
// event's line; digest quotes do not count), notifications and model-text
// bytes (UTF-8 of the second callback argument) per minute, the longest
// model text and the most lines in one notification, and for the firehose the
// JavaScript main thread's CPU (Linux schedstat of the main thread), the
// process CPU (Rust reader threads included) and ingest (bytesRead per second).
// Latency: the fixtures write each error line's write time ($EPOCHREALTIME,
// taken just before the write) to a side file (STAMP_FILE); an error line's
// latency is its notification's arrival in the callback (performance.timeOrigin
// + performance.now()) minus that time. Held lines wait for the bucket's next
// token, so the goal is refillMs (1000) + 50 ms at p99.
// One run each for the chatty server, the build log and the held lines; the
// firehose settings run BENCH_SIGNAL_FIREHOSE_RUNS [5] rounds, interleaved
// (default, batch, recommended, default, …), and the table shows each field's
// median and the median of the per-round ingest ratios, every round listed
// below it (ingest on this 2-core VM swings by a third between single runs).
// About 2 minutes in all.
// BENCH_BINARY=<path> picks the binary; only a default run replaces the signal
// section of bench/RESULTS.md (BENCH_WRITE=1 forces it).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { probe } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, percentile, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const CFG = { firehoseMs: envInt('BENCH_SIGNAL_FIREHOSE_MS', 3000), firehoseRuns: envInt('BENCH_SIGNAL_FIREHOSE_RUNS', 5) }
const LINE = 'firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN' // 60 characters

const IMPORTANT = '(?i)error|fail|exception|panic|listening|ready'
const SETTINGS = {
  default: {},
  recommended: 'RECOMMENDED_SIGNAL', // the addon's export, read in the worker
  unbatched: { important: IMPORTANT, digest: true },
  batch: { batchMs: 200 },
}
/** The registry's default throttle (burst 5, one token per second) and the default maxBatchLines. */
const REFILL_MS = 1000
const MAX_BATCH_LINES = 20

const SCENARIOS = {
  chatty: {
    what: '2000 INFO lines over ~4 s, 10 ERROR lines among them',
    command: `bash ${join(here, 'fixtures', 'chatty-server.sh')}`,
    isError: (line) => /^ERROR request \d+ failed/.test(line),
    errors: 10,
    stamps: true,
    settings: ['default', 'recommended'],
  },
  build: {
    what: '1200 compile lines over ~2.4 s, 12 warnings, 2 error lines',
    command: `bash ${join(here, 'fixtures', 'build-log.sh')}`,
    isError: (line) => /^error/.test(line),
    errors: 2,
    stamps: true,
    settings: ['default', 'recommended'],
  },
  held: {
    what: '10 INFO lines every 50 ms for ~15 s, an ERROR line in about one tick of three',
    command: `bash ${join(here, 'fixtures', 'held-lines.sh')}`,
    isError: (line) => /^ERROR held \d+/.test(line),
    errors: undefined, // as many as the fixture wrote (its stamp file)
    stamps: true,
    settings: ['default', 'recommended', 'unbatched'],
  },
  firehose: {
    what: `\`yes\` of a 60-character line for ${CFG.firehoseMs / 1000} s`,
    command: `yes '${LINE}'`,
    isError: () => false,
    errors: 0,
    cancelAfterMs: CFG.firehoseMs,
    settings: ['default', 'batch', 'recommended'],
  },
}

/** Worker: one monitor of `scenario` with `setting`, start() to its terminal notification. */
async function measure(name, settingName) {
  const scenario = SCENARIOS[name]
  const { MonitorRegistry, RECOMMENDED_SIGNAL } = loadTaskstream()
  const setting = SETTINGS[settingName] === 'RECOMMENDED_SIGNAL' ? { ...RECOMMENDED_SIGNAL } : SETTINGS[settingName]
  const registry = new MonitorRegistry()
  const seen = []
  let resolveDone
  const done = new Promise((r) => (resolveDone = r))
  registry.setNotificationCallback((display, model, meta) => {
    seen.push({ display, bytes: Buffer.byteLength(model), meta, at: performance.timeOrigin + performance.now() })
    if (meta.type === 'terminal') resolveDone()
  })
  const stampDir = scenario.stamps ? mkdtempSync(join(tmpdir(), 'signal-bench-')) : undefined
  const stampFile = stampDir && join(stampDir, 'stamps')
  const command = stampFile ? `STAMP_FILE=${stampFile} ${scenario.command}` : scenario.command
  const p = probe()
  const t0 = performance.now()
  const entry = registry.start({ command, description: name, ...setting })
  if (scenario.cancelAfterMs) setTimeout(() => registry.cancel(entry.id), scenario.cancelAfterMs)
  await done
  const elapsedMs = performance.now() - t0
  const m = p.stop()
  // Each error line's write time (ms since the epoch).
  const stamps = new Map()
  if (stampFile) {
    for (const row of readFileSync(stampFile, 'utf8').split('\n').filter(Boolean)) {
      const space = row.indexOf(' ')
      stamps.set(row.slice(space + 1), Number(row.slice(0, space)) * 1000)
    }
    rmSync(stampDir, { recursive: true, force: true })
  }
  const minutes = elapsedMs / 60_000
  const events = seen.filter((n) => n.meta.type === 'event')
  // The lines each event delivered: a batch's meta.lines, or the event's own line
  // (its display text after `: `, without a digest line).
  const linesOf = (n) => n.meta.lines ?? [n.display.slice(n.display.indexOf(': ') + 2).split('\n')[0]]
  // Lines the lane let out when the task stopped ride in the terminal notification's
  // meta.lines (API.md §6.7, "The end rides in the terminal notification"): delivered too.
  const carrying = seen.filter((n) => n.meta.type === 'event' || (n.meta.type === 'terminal' && n.meta.lines))
  const delivered = carrying.flatMap(linesOf)
  const bytes = seen.reduce((a, n) => a + n.bytes, 0)
  // Latency of every delivered error line; `held`: those in a notification of
  // held lines (known only without batchMs: there, such a notification is the
  // only one with meta.lines).
  const latencies = []
  const heldLatencies = []
  for (const n of carrying) {
    for (const line of linesOf(n)) {
      if (!scenario.isError(line) || !stamps.has(line)) continue
      const ms = n.at - stamps.get(line)
      latencies.push(ms)
      if (!setting.batchMs && n.meta.lines) heldLatencies.push(ms)
    }
  }
  const stats = (values) => ({ n: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: values.length ? Math.max(...values) : NaN })
  return {
    elapsedMs,
    notifications: seen.length,
    events: events.length,
    eventCount: entry.eventCount,
    droppedLines: entry.droppedLines,
    bytesRead: entry.bytesRead,
    errorsWritten: scenario.errors ?? stamps.size,
    errorsDelivered: new Set(delivered.filter(scenario.isError)).size,
    withDigest: seen.filter((n) => (n.meta.droppedSince ?? 0) > 0).length,
    modelBytes: bytes,
    notificationsPerMin: seen.length / minutes,
    modelBytesPerMin: bytes / minutes,
    maxModelBytes: Math.max(...seen.map((n) => n.bytes)),
    maxLines: Math.max(...events.map((n) => n.meta.lines?.length ?? 1)),
    latency: stats(latencies),
    heldLatency: stats(heldLatencies),
    jsThreadCpuMs: m.mainThreadCpuMs,
    eluActiveMs: m.eluActiveMs,
    processCpuMs: m.cpuMs,
    ingestMBps: entry.bytesRead / 1e6 / (elapsedMs / 1000),
  }
}

const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–')
const kb = (n) => `${(n / 1000).toFixed(1)} kB`

async function runParent() {
  const facts = machineFacts()
  const quiet = await waitForQuiet()
  const script = fileURLToPath(import.meta.url)
  const results = {}
  let disturbed = false
  // Every firehose round, per setting.
  const rounds = {}
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    const repeat = name === 'firehose' ? CFG.firehoseRuns : 1
    for (let round = 0; round < repeat; round++) {
      for (const setting of scenario.settings) {
        process.stderr.write(`  ${name} / ${setting}${repeat > 1 ? ` (round ${round + 1}/${repeat})` : ''}…\n`)
        const run = await undisturbed(`${name} ${setting}`, () => spawnWorker(script, name, setting))
        disturbed ||= run.disturbed
        ;(rounds[`${name}/${setting}`] ??= []).push({ ...run.value, disturbed: run.disturbed })
      }
    }
  }
  // One run: itself; several: the median of each number.
  for (const [key, runs] of Object.entries(rounds)) {
    const merged = { ...runs[0], disturbed: runs.some((r) => r.disturbed) }
    for (const [field, value] of Object.entries(runs[0])) {
      if (typeof value === 'number') merged[field] = median(runs.map((r) => r[field]))
    }
    results[key] = merged
  }
  const firehoseRatio = (setting) =>
    median(rounds[`firehose/${setting}`].map((r, i) => r.ingestMBps / rounds['firehose/default'][i].ingestMBps))
  const mark = (r) => (r.disturbed ? ' †' : '')
  const ms = (n) => (Number.isFinite(n) ? `${fmt(n)} ms` : '–')
  const latencyCell = (l) => (l.n ? `${ms(l.p50)} / ${ms(l.p99)} / ${ms(l.max)} (${l.n})` : '–')
  const rows = []
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    for (const setting of scenario.settings) {
      const r = results[`${name}/${setting}`]
      rows.push([
        `${name}${mark(r)}`,
        setting,
        r.errorsWritten ? `${r.errorsDelivered}/${r.errorsWritten}` : '–',
        `${r.notifications} (${r.events} ev.)`,
        fmt(r.notificationsPerMin),
        kb(r.modelBytes),
        kb(r.modelBytesPerMin),
        `${r.maxModelBytes} B`,
        r.maxLines,
        `${r.eventCount} / ${r.droppedLines}`,
        r.withDigest,
        latencyCell(r.latency),
      ])
    }
  }
  const signalTable = table(
    ['Scenario', 'Setting', 'Error lines to the model', 'Notifications', 'Notif./min', 'Model text', 'Model text/min', 'Longest notification', 'Most lines in one', 'Events / dropped', 'With a digest', 'Error line → notification p50 / p99 / max (lines)'],
    rows,
  )
  const fire = SCENARIOS.firehose.settings.map((s) => [s, results[`firehose/${s}`]])
  const base = results['firehose/default']
  const firehoseTable = table(
    ['Firehose setting', 'JS-thread CPU', 'ELU active', 'Process CPU', 'Ingest', 'Ingest vs default', 'Notifications'],
    fire.map(([s, r]) => [
      `${s}${mark(r)}`,
      `${fmt(r.jsThreadCpuMs)} ms`,
      `${fmt(r.eluActiveMs)} ms`,
      `${fmt(r.processCpuMs)} ms`,
      `${fmt(r.ingestMBps)} MB/s`,
      `${fmt(firehoseRatio(s), 2)}×`,
      r.notifications,
    ]),
  )
  const ratio = (a, b) => `${fmt(a / b, 2)}×`
  const yes = (ok) => (ok ? 'met' : '**not met**')
  const budget = REFILL_MS + 50
  const held = results['held/unbatched']
  const goals = [
    'Against the issue\'s goals (recommended vs default, this run):',
    ...['chatty', 'build', 'held'].map((name) => {
      const [d, r] = [results[`${name}/default`], results[`${name}/recommended`]]
      const n = r.errorsWritten
      const all = r.errorsDelivered === n
      const fewer = r.notifications <= d.notifications
      const bounded = r.maxLines <= MAX_BATCH_LINES
      return `- ${name}: error lines to the model ${d.errorsDelivered}/${d.errorsWritten} → ${r.errorsDelivered}/${n} (every one: ${yes(all)}); notifications ${d.notifications} → ${r.notifications} (${ratio(r.notifications, d.notifications)}; no more than the default: ${yes(fewer)}); at most ${r.maxLines} lines in one (≤ ${MAX_BATCH_LINES}: ${yes(bounded)}); model text ${ratio(r.modelBytes, d.modelBytes)}; error line → notification p99 ${ms(r.latency.p99)}, max ${ms(r.latency.max)} (≤ ${budget} ms: ${yes(r.latency.p99 <= budget)}).`
    }),
    `- held lines alone (\`unbatched\`, the recommended setting without \`batchMs\`, where a notification of held lines is the only kind with \`meta.lines\`): ${held.heldLatency.n} held error lines, latency p50 ${ms(held.heldLatency.p50)}, p99 ${ms(held.heldLatency.p99)}, max ${ms(held.heldLatency.max)} (p99 ≤ refillMs + 50 = ${budget} ms: ${yes(held.heldLatency.p99 <= budget)}); error lines ${held.errorsDelivered}/${held.errorsWritten}; notifications ${held.notifications} against the default's ${results['held/default'].notifications}.`,
    `- firehose (medians of ${CFG.firehoseRuns} interleaved rounds): notifications ${base.notifications} → ${results['firehose/recommended'].notifications}; JS-thread CPU ${fmt(base.jsThreadCpuMs)} → ${fmt(results['firehose/recommended'].jsThreadCpuMs)} ms; ingest ${fmt(firehoseRatio('recommended'), 2)}× of the default (≥ 0.90×: ${yes(firehoseRatio('recommended') >= 0.9)}), ${fmt(firehoseRatio('batch'), 2)}× with \`batchMs\` alone (the counting fast path stays).`,
  ].join('\n')
  const markdown = [
    '## Signal per token (`bench/signal.mjs`)',
    '',
    'API.md §6.7. Replayable outputs under a native monitor (default registry throttle: burst 5, one token per second), each with no §6.7 option (`default`) and with the README\'s agent setting (`recommended`: `RECOMMENDED_SIGNAL`, the addon\'s export); the held-lines output also without `batchMs` (`unbatched`); the firehose also with `batchMs: 200` alone (`batch`). Important lines that find the bucket empty are held and leave on the bucket\'s next token, the moment it refills (no second bucket). One fresh Node process per run, timed from `start()` to the terminal notification (the firehose is cancelled after ' +
      `${CFG.firehoseMs / 1000} s). "Error lines to the model": distinct error lines inside delivered events or the terminal notification's \`meta.lines\` (digest quotes not counted). Model text: UTF-8 bytes of every notification's model text, the terminal one included. Latency: from the error line's write (the fixture's \`$EPOCHREALTIME\` just before it) to its notification in the callback. The firehose rows are medians of ${CFG.firehoseRuns} interleaved rounds; "Ingest vs default" is the median of the per-round ratios.`,
    '',
    factsMarkdown(facts, { 'Binary': binaryFacts(), 'Machine before the run': quiet }),
    '',
    signalTable,
    '',
    firehoseTable,
    '',
    `Firehose rounds, ingest in MB/s (default / batch / recommended): ${rounds['firehose/default']
      .map((d, i) => `${fmt(d.ingestMBps)} / ${fmt(rounds['firehose/batch'][i].ingestMBps)} / ${fmt(rounds['firehose/recommended'][i].ingestMBps)}`)
      .join('; ')}.`,
    '',
    goals,
    '',
    disturbed ? '† a cargo/rustc build ran during this measurement.' : '',
  ].join('\n')
  console.log(markdown)
  if (mayWriteResults(['BENCH_SIGNAL_FIREHOSE_MS', 'BENCH_SIGNAL_FIREHOSE_RUNS']) && !disturbed) {
    console.log(`\nwrote ${writeSection('signal', markdown)}`)
  }
}

if (process.argv[2] === '--worker') await runWorker(measure, process.argv[3], process.argv[4])
else await runParent()
