// Stock vs patched Gemini CLI 0.61.0 on the same machine in the same run, headless: containment
// after a normal end and after a SIGKILL of the CLI, and the 200 MB `yes` firehose as a background
// job; the monitor tool on the chatty dev server (patched only: stock has none). Writes
// results/<date>.json and prints a table.
//   npm run bench:gemini     (e2e/setup.mjs, then this; uses the addon the repository built)
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { patch } from '../lib/patcher.mjs'
import { containmentScenario, firehoseScenario, monitorScenario } from './scenarios.mjs'
import { copyGemini } from './support.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const cleanups = []
const t = { after: (f) => cleanups.push(f) }
const stockDir = copyGemini(t)
const patchedDir = copyGemini(t)
const { manifest } = patch(patchedDir)

const results = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, loadavg: os.loadavg(), gemini: manifest.geminiVersion, taskstream: manifest.taskstreamVersion, runs: {} }
const log = (k, v) => {
  results.runs[k] = v
  console.error(k, JSON.stringify(v))
}
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
} finally {
  for (const f of cleanups.reverse()) await f()
}
results.loadavgAfter = os.loadavg()
fs.mkdirSync(path.join(here, 'results'), { recursive: true })
const out = path.join(here, 'results', `${results.date.slice(0, 16).replace(':', '')}.json`)
fs.writeFileSync(out, JSON.stringify(results, null, 2) + '\n')
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
console.log(`| scenario | metric | stock ${results.gemini} | patched |\n|---|---|---:|---:|\n${rows.map((x) => `| ${x.join(' | ')} |`).join('\n')}`)
console.log(`\n(${out}; load average ${results.loadavg.map((x) => x.toFixed(1)).join(' ')} before, ${results.loadavgAfter.map((x) => x.toFixed(1)).join(' ')} after)`)
