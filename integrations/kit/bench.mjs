// A bench's plumbing (`npm run bench:gemini` uses it; bench:qwen has the same steps inline, written
// first, and can take this up): the run's record (date, Node, CPUs, load, the CLI's and
// taskstream's versions), each scenario's numbers logged to stderr as they come, the record written
// to `<e2e>/results/<date>.json`, the table printed in markdown; and whether the interactive
// scenarios (the CLI's UI in tmux) can run here.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * A bench run's record, `{ date, node, cpus, loadavg, ...meta, runs: {} }`, and `log(key, numbers)`,
 * which keeps a scenario's numbers under `runs[key]` and prints them to stderr.
 */
export function benchRecord(meta) {
  const results = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, loadavg: os.loadavg(), ...meta, runs: {} }
  const log = (key, value) => {
    results.runs[key] = value
    console.error(key, JSON.stringify(value))
  }
  return { results, log }
}

/**
 * Why the interactive scenarios cannot run here (they find the job processes through /proc, and
 * drive the UI in tmux; `tmuxMissing` is the CLI's check), or false.
 */
export const interactiveSkip = (tmuxMissing) => (process.platform === 'linux' ? tmuxMissing() : 'Linux only')

/** Writes the record to `<e2eDir>/results/<date to the minute>.json`; returns the file's path. */
export function writeResults(e2eDir, results) {
  fs.mkdirSync(path.join(e2eDir, 'results'), { recursive: true })
  const out = path.join(e2eDir, 'results', `${results.date.slice(0, 16).replace(':', '')}.json`)
  fs.writeFileSync(out, JSON.stringify(results, null, 2) + '\n')
  return out
}

/** A markdown table: `header` and `rows` of cells; the first two columns left-aligned, the others right. */
export const markdownTable = (header, rows) =>
  [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`, ...rows.map((cells) => `| ${cells.join(' | ')} |`)].join('\n')
