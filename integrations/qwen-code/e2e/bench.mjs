// Stock vs integrated Qwen Code 0.24.4 on the same machine in the same run: the chatty dev server,
// containment after SIGKILL, and the `yes` firehose (warm and cold), headless; then the chatty dev
// server in the interactive CLI (in tmux; skipped without tmux). Writes results/<date>.json and prints a table.
//   node integrations/qwen-code/e2e/bench.mjs     (after e2e/setup.mjs and a release build: npm run build)
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { patch } from '../lib/patcher.mjs'
import { tmuxMissing } from './interactive.mjs'
import { interactiveChattyScenario } from './interactive-scenarios.mjs'
import { chattyScenario, containmentScenario, firehoseScenario } from './scenarios.mjs'
import { requireInstalledQwen } from './support.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const stockDir = requireInstalledQwen()
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tsq-bench-'))
const patchedDir = path.join(root, 'node_modules', '@qwen-code', 'qwen-code')
fs.cpSync(stockDir, patchedDir, { recursive: true, verbatimSymlinks: true })
const { manifest } = patch(patchedDir)

const results = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, loadavg: os.loadavg(), qwen: manifest.qwenVersion, taskstream: manifest.taskstreamVersion, runs: {} }
const log = (k, v) => {
  results.runs[k] = v
  console.error(k, JSON.stringify(v))
}
try {
  for (const [name, dir] of [['stock', stockDir], ['integrated', patchedDir]]) {
    const c = await chattyScenario({ qwenDir: dir })
    log(`chatty/${name}`, { errorLines: c.errorLines.length, notifications: c.notifications, modelBytes: c.modelBytes })
  }
  for (const [name, dir] of [['stock', stockDir], ['integrated', patchedDir]]) {
    const k = await containmentScenario({ qwenDir: dir, mode: 'sigkill' })
    log(`sigkill/${name}`, { survivorsAfter2s: k.survivors, of: k.taskPids.length, cliProcesses: k.cliProcesses })
    const e = await containmentScenario({ qwenDir: dir, mode: 'exit' })
    log(`exit/${name}`, { survivorsAfter2s: e.survivors, of: e.taskPids.length })
  }
  // warm: the CLI's one-off WebAssembly compilation of its shell parser is behind the window
  // (the steady state of a session); cold: inside it (the monitor is the session's first shell command).
  for (const warm of [true, false]) {
    for (const [name, dir] of [['stock', stockDir], ['integrated', patchedDir]]) {
      log(`firehose${warm ? '' : '-cold'}/${name}`, await firehoseScenario({ qwenDir: dir, warm }))
    }
  }
  // The interactive CLI: the notifications reach the model as they come (a turn each), and show on screen.
  const noTmux = process.platform === 'linux' ? tmuxMissing() : 'Linux only'
  if (noTmux) console.error(`interactive runs skipped: ${noTmux}`)
  else {
    for (const [name, dir] of [['stock', stockDir], ['integrated', patchedDir]]) {
      const c = await interactiveChattyScenario({ qwenDir: dir })
      log(`interactive-chatty/${name}`, {
        errorLines: c.errorLines.length,
        notifications: c.notifications,
        modelBytes: c.modelBytes,
        screenRows: c.screen.rows,
        screenNotifications: c.screen.items,
        screenErrorLines: c.screen.errorLines.length,
        screenColumns: c.cols,
      })
    }
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true })
}
fs.mkdirSync(path.join(here, 'results'), { recursive: true })
const out = path.join(here, 'results', `${results.date.slice(0, 16).replace(':', '')}.json`)
fs.writeFileSync(out, JSON.stringify(results, null, 2) + '\n')
const r = results.runs
const rows = [
  ['chatty dev server', 'error lines that reach the model', `${r['chatty/stock'].errorLines}/10`, `${r['chatty/integrated'].errorLines}/10`],
  ['', 'notifications to the model', r['chatty/stock'].notifications, r['chatty/integrated'].notifications],
  ['', 'notification text', `${(r['chatty/stock'].modelBytes / 1000).toFixed(1)} kB`, `${(r['chatty/integrated'].modelBytes / 1000).toFixed(1)} kB`],
  ['CLI SIGKILLed', 'task processes alive 2 s later', `${r['sigkill/stock'].survivorsAfter2s}/4`, `${r['sigkill/integrated'].survivorsAfter2s}/4`],
  ['normal exit', 'task processes alive 2 s later', `${r['exit/stock'].survivorsAfter2s}/4`, `${r['exit/integrated'].survivorsAfter2s}/4`],
  ['`yes` firehose, 200 MB (warm)', "CLI's CPU time", `${(r['firehose/stock'].cliCpuMs / 1000).toFixed(2)} s`, `${(r['firehose/integrated'].cliCpuMs / 1000).toFixed(2)} s`],
  ['', "producer's throughput", `${r['firehose/stock'].producerMBps.toFixed(1)} MB/s`, `${r['firehose/integrated'].producerMBps.toFixed(1)} MB/s`],
  ['', "CLI's peak RSS", `${r['firehose/stock'].peakRssMB.toFixed(0)} MB`, `${r['firehose/integrated'].peakRssMB.toFixed(0)} MB`],
  ['', 'time to the terminal notification', `${(r['firehose/stock'].terminalMs / 1000).toFixed(2)} s`, `${(r['firehose/integrated'].terminalMs / 1000).toFixed(2)} s`],
  ['the same, cold (the first shell command of the session)', "CLI's CPU time", `${(r['firehose-cold/stock'].cliCpuMs / 1000).toFixed(2)} s`, `${(r['firehose-cold/integrated'].cliCpuMs / 1000).toFixed(2)} s`],
  ['', "producer's throughput", `${r['firehose-cold/stock'].producerMBps.toFixed(1)} MB/s`, `${r['firehose-cold/integrated'].producerMBps.toFixed(1)} MB/s`],
  ['', 'time to the terminal notification', `${(r['firehose-cold/stock'].terminalMs / 1000).toFixed(2)} s`, `${(r['firehose-cold/integrated'].terminalMs / 1000).toFixed(2)} s`],
]
if (r['interactive-chatty/stock'] && r['interactive-chatty/integrated']) {
  const [st, it] = [r['interactive-chatty/stock'], r['interactive-chatty/integrated']]
  rows.push(
    ['chatty dev server, interactive (tmux)', 'error lines that reach the model', `${st.errorLines}/10`, `${it.errorLines}/10`],
    ['', 'notifications to the model', st.notifications, it.notifications],
    ['', 'notification text', `${(st.modelBytes / 1000).toFixed(1)} kB`, `${(it.modelBytes / 1000).toFixed(1)} kB`],
    ['', `monitor rows on screen (${st.screenColumns} columns; notifications shown)`, `${st.screenRows} (${st.screenNotifications})`, `${it.screenRows} (${it.screenNotifications})`],
    ['', 'error lines on screen', `${st.screenErrorLines}/10`, `${it.screenErrorLines}/10`],
  )
}
console.log(`| scenario | metric | stock 0.24.4 | integrated |\n|---|---|---:|---:|\n${rows.map((x) => `| ${x.join(' | ')} |`).join('\n')}`)
console.log(`\n(${out})`)
