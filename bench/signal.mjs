// Signal per token (issue 14, API.md §6.7): what reaches the model from three
// replayable outputs, each under a native monitor with today's defaults and
// with the recommended agent setting, side by side in one run.
//
// Scenarios (bench/fixtures/):
//   chatty    chatty-server.sh: 2000 INFO lines over ~4 s (50 every 100 ms) with
//             10 `ERROR request … failed` lines spread through them
//   build     build-log.sh: 1200 compile lines over ~2.4 s, a warning every 100
//             lines, one `error[E0308]` near the end and the final
//             `error: could not compile …` (exit 1)
//   firehose  `yes <60-char line>` for BENCH_SIGNAL_FIREHOSE_MS [3000], then cancel()
// Settings:
//   default      no §6.7 option (the TypeScript registry's texts and throttle)
//   recommended  important '(?i)error|fail|exception|panic|listening|ready',
//                batchMs 200, digest true (the README's agent setting)
//   batch        batchMs 200 alone (firehose only: keeps the counting fast path)
//   fewest       the recommended setting with long windows (batchMs 1000,
//                maxBatchLines 250, and maxEvents 10000, its maximum, since maxEvents counts
//                lines): what it takes to send fewer notifications than the
//                default while every error line still arrives
// The registry's throttle is the default one (burst 5, one token per second).
//
// Every run is a fresh Node process (`--worker <scenario> <setting>`), timed
// from start() to the terminal notification. Reported per run: error lines
// that reached the model (in a delivered event: a line of `meta.lines` or the
// event's line; digest quotes do not count), notifications and model-text
// bytes (UTF-8 of the second callback argument) per minute, the longest
// model text, and for the firehose the JavaScript main thread's CPU (Linux
// schedstat of the main thread), the process CPU (Rust reader threads
// included) and ingest (bytesRead per second).
// One run each for the chatty server and the build log; the firehose settings
// run BENCH_SIGNAL_FIREHOSE_RUNS [5] rounds, interleaved (default, batch,
// recommended, default, …), and the table shows each field's median and the
// median of the per-round ingest ratios, every round listed below it (ingest
// on this 2-core VM swings by a third between single runs). About 70 s in all.
// BENCH_BINARY=<path> picks the binary; only a default run replaces the signal
// section of bench/RESULTS.md (BENCH_WRITE=1 forces it).
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { probe } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const CFG = { firehoseMs: envInt('BENCH_SIGNAL_FIREHOSE_MS', 3000), firehoseRuns: envInt('BENCH_SIGNAL_FIREHOSE_RUNS', 5) }
const LINE = 'firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN' // 60 characters

const SETTINGS = {
  default: {},
  recommended: { important: '(?i)error|fail|exception|panic|listening|ready', batchMs: 200, digest: true },
  batch: { batchMs: 200 },
  // maxEvents counts lines: 250-line windows would reach the default 1000 in four notifications.
  fewest: { important: '(?i)error|fail|exception|panic|listening|ready', batchMs: 1000, maxBatchLines: 250, digest: true, maxEvents: 10_000 },
}

const SCENARIOS = {
  chatty: {
    what: '2000 INFO lines over ~4 s, 10 ERROR lines among them',
    command: `bash ${join(here, 'fixtures', 'chatty-server.sh')}`,
    isError: (line) => /^ERROR request \d+ failed/.test(line),
    errors: 10,
    settings: ['default', 'recommended', 'fewest'],
  },
  build: {
    what: '1200 compile lines over ~2.4 s, 12 warnings, 2 error lines',
    command: `bash ${join(here, 'fixtures', 'build-log.sh')}`,
    isError: (line) => /^error/.test(line),
    errors: 2,
    settings: ['default', 'recommended', 'fewest'],
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
  const { MonitorRegistry } = loadTaskstream()
  const registry = new MonitorRegistry()
  const seen = []
  let resolveDone
  const done = new Promise((r) => (resolveDone = r))
  registry.setNotificationCallback((display, model, meta) => {
    seen.push({ display, bytes: Buffer.byteLength(model), meta })
    if (meta.type === 'terminal') resolveDone()
  })
  const p = probe()
  const t0 = performance.now()
  const entry = registry.start({ command: scenario.command, description: name, ...SETTINGS[settingName] })
  if (scenario.cancelAfterMs) setTimeout(() => registry.cancel(entry.id), scenario.cancelAfterMs)
  await done
  const elapsedMs = performance.now() - t0
  const m = p.stop()
  const minutes = elapsedMs / 60_000
  const events = seen.filter((n) => n.meta.type === 'event')
  // The lines each event delivered: a batch's meta.lines, or the event's own line
  // (its display text after `: `, without a digest line).
  const delivered = events.flatMap((n) => n.meta.lines ?? [n.display.slice(n.display.indexOf(': ') + 2).split('\n')[0]])
  const bytes = seen.reduce((a, n) => a + n.bytes, 0)
  return {
    elapsedMs,
    notifications: seen.length,
    events: events.length,
    eventCount: entry.eventCount,
    droppedLines: entry.droppedLines,
    bytesRead: entry.bytesRead,
    errorsDelivered: new Set(delivered.filter(scenario.isError)).size,
    withDigest: seen.filter((n) => (n.meta.droppedSince ?? 0) > 0).length,
    modelBytes: bytes,
    notificationsPerMin: seen.length / minutes,
    modelBytesPerMin: bytes / minutes,
    maxModelBytes: Math.max(...seen.map((n) => n.bytes)),
    maxLines: Math.max(...events.map((n) => n.meta.lines?.length ?? 1)),
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
  const rows = []
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    for (const setting of scenario.settings) {
      const r = results[`${name}/${setting}`]
      rows.push([
        `${name}${mark(r)}`,
        setting,
        scenario.errors ? `${r.errorsDelivered}/${scenario.errors}` : '–',
        `${r.notifications} (${r.events} ev.)`,
        fmt(r.notificationsPerMin),
        kb(r.modelBytes),
        kb(r.modelBytesPerMin),
        `${r.maxModelBytes} B`,
        r.maxLines,
        `${r.eventCount} / ${r.droppedLines}`,
        r.withDigest,
      ])
    }
  }
  const signalTable = table(
    ['Scenario', 'Setting', 'Error lines to the model', 'Notifications', 'Notif./min', 'Model text', 'Model text/min', 'Longest notification', 'Most lines in one', 'Events / dropped', 'With a digest'],
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
  const goals = [
    'Against the issue\'s goals (recommended vs default):',
    ...['chatty', 'build'].map((name) => {
      const [d, r] = [results[`${name}/default`], results[`${name}/recommended`]]
      const n = SCENARIOS[name].errors
      return `- ${name}: error lines to the model ${d.errorsDelivered}/${n} → ${r.errorsDelivered}/${n}; notifications ${d.notifications} → ${r.notifications} (${ratio(r.notifications, d.notifications)}); model text ${ratio(r.modelBytes, d.modelBytes)}; longest notification ${r.maxModelBytes} B (at most ${r.maxLines} lines).`
    }),
    `- firehose (medians of ${CFG.firehoseRuns} interleaved rounds): notifications ${base.notifications} → ${results['firehose/recommended'].notifications}; JS-thread CPU ${fmt(base.jsThreadCpuMs)} → ${fmt(results['firehose/recommended'].jsThreadCpuMs)} ms; ingest ${fmt(firehoseRatio('recommended'), 2)}× of the default (plain lines are counted from the raw bytes with \`important\` and \`digest\` too; a window per token moves the refill point), ${fmt(firehoseRatio('batch'), 2)}× with \`batchMs\` alone (the counting fast path stays).`,
    '- "No more notifications than the default" does not hold where important lines are spread out: each one outside a window the main bucket paid for opens its own window on the importance bucket (§6.7), on top of the main bucket\'s windows.',
    ...['chatty', 'build'].map((name) => {
      const [d, f] = [results[`${name}/default`], results[`${name}/fewest`]]
      const n = SCENARIOS[name].errors
      return `- ${name} with long windows (\`fewest\`: \`batchMs: 1000\`, \`maxBatchLines: 250\`, \`maxEvents: 10000\`): error lines ${f.errorsDelivered}/${n}; notifications ${d.notifications} → ${f.notifications} (${ratio(f.notifications, d.notifications)}); model text ${ratio(f.modelBytes, d.modelBytes)} of the default; longest notification ${f.maxModelBytes} B (${f.maxLines} lines). Fewer notifications than the default are possible only by letting a window span several important lines, which carries every line between them.`
    }),
  ].join('\n')
  const markdown = [
    '## Signal per token (`bench/signal.mjs`)',
    '',
    'Issue 14 / API.md §6.7. Three replayable outputs under a native monitor (default registry throttle: burst 5, one token per second), each with no §6.7 option (`default`) and with the README\'s agent setting (`recommended`: `important: \'(?i)error|fail|exception|panic|listening|ready\'`, `batchMs: 200`, `digest: true`); the firehose also with `batchMs: 200` alone (`batch`); the chatty server and the build log also with long windows (`fewest`: the recommended setting with `batchMs: 1000`, `maxBatchLines: 250` and `maxEvents: 10000` (its maximum), since `maxEvents` counts lines). One fresh Node process per run, timed from `start()` to the terminal notification (the firehose is cancelled after ' +
      `${CFG.firehoseMs / 1000} s). "Error lines to the model": distinct error lines inside delivered events (digest quotes not counted). Model text: UTF-8 bytes of every notification's model text, the terminal one included. The firehose rows are medians of ${CFG.firehoseRuns} interleaved rounds; "Ingest vs default" is the median of the per-round ratios.`,
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
  if (mayWriteResults(['BENCH_SIGNAL_FIREHOSE_MS']) && !disturbed) {
    console.log(`\nwrote ${writeSection('signal', markdown)}`)
  }
}

if (process.argv[2] === '--worker') await runWorker(measure, process.argv[3], process.argv[4])
else await runParent()
