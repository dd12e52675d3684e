// Session 1 of the demo's "a dev server that survives a CLI restart": this
// process plays an agent CLI that starts the dev server as a persisted
// monitor, waits for its ready line, reports what it started as one JSON line
// on stdout, and then idles until the demo kills it (SIGKILL: the CLI
// crashes). The dev server keeps running under its keeper; the next session
// finds it with recover().
//
//   node examples/persist-session.mjs <stateDir> <leaseMs>
//
// Started by examples/demo.mjs, which kills it on a timeout.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { MonitorRegistry } from '../index.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const [stateDir, leaseArg] = process.argv.slice(2)
const leaseMs = Number(leaseArg)
// Monitors do not hold Node's loop: this timer keeps the "CLI" alive until it is killed.
const alive = setInterval(() => {}, 1000)

const env = { PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` }
const registry = new MonitorRegistry()
// The ready line arrives as an event (a callback set before start() sees every event; a
// waitFor() sees lines from its call on, and start() blocks until the keeper answers).
let onReady
const readyLine = new Promise((resolve) => (onReady = resolve))
registry.setNotificationCallback((displayText) => {
  if (/ready on http:\/\/\S+/.test(displayText)) onReady(displayText)
})
const entry = registry.start({
  command: 'node ./examples/fixtures/dev-server.mjs',
  description: 'dev server (persisted)',
  cwd: root,
  env,
  idleTimeoutMs: 600_000,
  persist: { stateDir, leaseMs },
})
if (entry.status !== 'running') {
  process.stderr.write(`persist-session: the dev server did not start: ${entry.error ?? entry.status}\n`)
  process.exit(2)
}

let timer
const ready = await Promise.race([readyLine, new Promise((resolve) => (timer = setTimeout(resolve, 10_000, null)))])
clearTimeout(timer)
const url = ready && /ready on (http:\/\/\S+)/.exec(ready)?.[1]
if (!url) {
  process.stderr.write('persist-session: no ready line within 10 s\n')
  registry.abortAll({ notify: false })
  process.exit(2)
}

// Everything the server printed so far was delivered here. Wait (bounded) until
// this host's cursor says so on disk (it is written at least every second), so
// the next session's digest counts exactly the lines printed while no host ran.
const log = join(stateDir, `${entry.id}.log`)
const cursor = join(stateDir, `${entry.id}.cursor`)
const cursorOffset = () => {
  try {
    return JSON.parse(readFileSync(cursor, 'utf8')).offset
  } catch {
    return -1 // not written yet, or being replaced
  }
}
const deadline = Date.now() + 10_000
while (!(existsSync(log) && cursorOffset() >= statSync(log).size)) {
  if (Date.now() > deadline) {
    process.stderr.write('persist-session: the cursor did not reach the end of the log within 10 s\n')
    registry.abortAll({ notify: false })
    process.exit(2)
  }
  await new Promise((r) => setTimeout(r, 20))
}

const record = JSON.parse(readFileSync(join(stateDir, `${entry.id}.task.json`), 'utf8'))
process.stdout.write(
  `${JSON.stringify({ id: entry.id, pid: entry.pid, url, keeper: record.keeper.pid, tag: record.task.tag, cliPid: process.pid })}\n`,
)
void alive
