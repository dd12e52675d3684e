// Stock vs patched Gemini CLI 0.61.0 on the same machine in the same run, headless: containment
// after a normal end and after a SIGKILL of the CLI, and the 200 MB `yes` firehose as a background
// job; the monitor tool on the chatty dev server (patched only: stock has none); then in the
// interactive UI (in tmux; skipped without tmux, as bench:qwen's): the monitor on the chatty dev
// server, and a background job with a foreground command moved to the background by Ctrl+B (their
// terminal, their logs, and what is left after Ctrl+C twice and after a SIGKILL of the CLI). Writes
// results/<date>.json and prints a table.
//   npm run bench:gemini     (e2e/setup.mjs, then this; uses the addon the repository built)
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { benchRecord, interactiveSkip, markdownTable, writeResults } from '../../kit/bench.mjs'
import { patch } from '../lib/patcher.mjs'
import { copyForInteractive, tmuxMissing } from './interactive.mjs'
import { interactiveMonitorScenario, interactiveTerminalScenario } from './interactive-scenarios.mjs'
import { containmentScenario, firehoseScenario, monitorScenario } from './scenarios.mjs'
import { copyGemini } from './support.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const cleanups = []
const t = { after: (f) => cleanups.push(f) }
const stockDir = copyGemini(t)
const patchedDir = copyGemini(t)
const { manifest } = patch(patchedDir)

const { results, log } = benchRecord({ gemini: manifest.geminiVersion, taskstream: manifest.taskstreamVersion })
try {
  for (const [name, dir] of [['stock', stockDir], ['patched', patchedDir]]) {
    for (const end of ['exit', 'sigkill']) {
      const c = await containmentScenario(t, dir, end, { waitAllDeadMs: name === 'stock' ? 0 : 15_000 })
      log(`${end}/${name}`, { survivorsAfter2s: c.survivors, of: c.processes })
    }
  }
  const m = await monitorScenario(t, patchedDir)
  log('monitor/patched', { errorLines: m.errorLines.length, updates: m.updates.length, updateBytes: m.updateBytes, completed: m.completed })
  for (const [name, dir] of [['stock', stockDir], ['patched', patchedDir]]) {
    const f = await firehoseScenario(t, dir)
    log(`firehose/${name}`, { cliCpuMs: f.cliCpuMs, producerMBps: f.producerMBps, peakRssMB: f.peakRssMB })
  }
  // The interactive UI: copies with the installed node-pty beside them (the stock UI runs its shell
  // commands on it, as an installed CLI does).
  const noTmux = interactiveSkip(tmuxMissing)
  if (noTmux) console.error(`interactive runs skipped: ${noTmux}`)
  else {
    const ui = {}
    for (const name of ['stock', 'patched']) {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), `tsg-bench-ui-${name}-`))
      t.after(() => fs.rmSync(root, { recursive: true, force: true }))
      ui[name] = copyForInteractive(root)
    }
    patch(ui.patched)
    for (const [name, dir] of Object.entries(ui)) {
      const m = await interactiveMonitorScenario({ pkgDir: dir })
      log(`interactive-monitor/${name}`, {
        monitorOffered: m.offered.includes('monitor'),
        errorLines: m.errorLines.length,
        updates: m.updates.length,
        notifications: m.notifications ?? 0,
        modelBytes: m.modelBytes,
        screenRows: m.screen?.rows ?? 0,
        screenItems: m.screen?.items ?? 0,
        screenErrorLines: m.screen?.errorLines.length ?? 0,
      })
    }
    for (const end of ['ctrlc', 'sigkill']) {
      for (const [name, dir] of Object.entries(ui)) {
        const r = await interactiveTerminalScenario({ pkgDir: dir, end, waitAllDeadMs: name === 'patched' ? 30_000 : 0 })
        const jobs = Object.values(r.jobs)
        log(`interactive-terminal-${end}/${name}`, {
          survivorsAfter2s: r.survivors,
          of: r.of,
          allDeadMs: r.allDeadMs,
          onTerminal: jobs.every((j) => j.leader.tty && j.allOnTty),
          taskstream: jobs.every((j) => j.leader.taskId !== undefined),
          movedJobLogged: r.jobs.fg.log !== undefined,
          logsClean: jobs.every((j) => j.log && !j.log.ansi && !j.log.cr),
        })
      }
    }
  }
} finally {
  for (const f of cleanups.reverse()) await f()
}
results.loadavgAfter = os.loadavg()
const out = writeResults(here, results)
const r = results.runs
const [fs0, fp] = [r['firehose/stock'], r['firehose/patched']]
const rows = [
  ['job ignoring SIGTERM, double-forked, writing to files', 'alive 2 s after a normal end', `${r['exit/stock'].survivorsAfter2s}/${r['exit/stock'].of}`, `${r['exit/patched'].survivorsAfter2s}/${r['exit/patched'].of}`],
  ['', 'alive 2 s after a SIGKILL of the CLI', `${r['sigkill/stock'].survivorsAfter2s}/${r['sigkill/stock'].of}`, `${r['sigkill/patched'].survivorsAfter2s}/${r['sigkill/patched'].of}`],
  ['chatty dev server under `monitor`', 'ERROR lines reaching the model; updates; their text', 'no monitor tool', `${r['monitor/patched'].errorLines}/10; ${r['monitor/patched'].updates}; ${(r['monitor/patched'].updateBytes / 1000).toFixed(1)} kB`],
  ['200 MB `yes` firehose as a background job', "CLI's CPU time", `${(fs0.cliCpuMs / 1000).toFixed(2)} s`, `${(fp.cliCpuMs / 1000).toFixed(2)} s (${(fs0.cliCpuMs / fp.cliCpuMs).toFixed(0)}× less)`],
  ['', "producer's throughput", `${fs0.producerMBps.toFixed(1)} MB/s`, `${fp.producerMBps.toFixed(1)} MB/s (${(fp.producerMBps / fs0.producerMBps).toFixed(0)}×)`],
  ['', "CLI's peak RSS", `${fs0.peakRssMB.toFixed(0)} MB`, `${fp.peakRssMB.toFixed(0)} MB`],
]
if (r['interactive-monitor/stock'] && r['interactive-monitor/patched']) {
  const [ms, mp] = [r['interactive-monitor/stock'], r['interactive-monitor/patched']]
  const [cs, cp, ks, kp] = ['ctrlc/stock', 'ctrlc/patched', 'sigkill/stock', 'sigkill/patched'].map((k) => r[`interactive-terminal-${k}`])
  const yes = (b) => (b ? 'yes' : 'no')
  rows.push(
    ['chatty dev server under `monitor`, interactive (tmux)', 'ERROR lines reaching the model; updates; their text', ms.monitorOffered ? `${ms.errorLines}/10` : 'no monitor tool', `${mp.errorLines}/10; ${mp.notifications}; ${(mp.modelBytes / 1000).toFixed(1)} kB`],
    ['', 'on screen: monitor rows (updates shown); ERROR lines', '', `${mp.screenRows} (${mp.screenItems}); ${mp.screenErrorLines}/10`],
    ['a background job and a foreground command moved by Ctrl+B, interactive, both ignoring SIGHUP and SIGTERM', 'on a terminal; taskstream tasks; the moved one logged; logs free of ANSI and CR', [cs.onTerminal, cs.taskstream, cs.movedJobLogged, cs.logsClean].map(yes).join('; '), [cp.onTerminal, cp.taskstream, cp.movedJobLogged, cp.logsClean].map(yes).join('; ')],
    ['', 'processes alive 2 s after Ctrl+C twice', `${cs.survivorsAfter2s}/${cs.of}`, `${cp.survivorsAfter2s}/${cp.of}`],
    ['', 'processes alive 2 s after a SIGKILL of the CLI', `${ks.survivorsAfter2s}/${ks.of}`, `${kp.survivorsAfter2s}/${kp.of}`],
  )
}
console.log(markdownTable(['scenario', 'metric', `stock ${results.gemini}`, 'patched'], rows))
console.log(`\n(${out}; load average ${results.loadavg.map((x) => x.toFixed(1)).join(' ')} before, ${results.loadavgAfter.map((x) => x.toFixed(1)).join(' ')} after)`)
