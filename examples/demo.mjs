// taskstream demo: plays the part of an agent CLI (Qwen Code / Gemini CLI
// style) whose background-task core is taskstream.
//
//   1. the guards the CLI runs before anything starts (monitor parameter
//      checks, the foreground-sleep guard);
//   2. three native monitors on real commands from examples/fixtures/:
//      a noisy coloured log that bursts and then fails, a silent command that
//      hits its idle timeout, and a dev server that runs until it is stopped;
//   3. every notification as the CLI would show it, plus what the model gets,
//      including a `waitFor` on the dev server's ready line (a bounded wait in
//      Rust instead of a `sleep`/`until` loop) and a settled notification
//      when its output stops moving;
//   4. the `/tasks` listing, before and after the dev server is stopped, with
//      who ended each task;
//   5. terminal mode: an installer that only asks its question on a terminal;
//      the agent sees the prompt on the screen, answers it with write(), and
//      gets the settled screen as the model would see it;
//   6. task control: a leaking test under memory, CPU and process limits,
//      and a test watcher restarted under its id;
//   7. a dev server that survives a CLI restart: a first CLI process
//      (examples/persist-session.mjs) starts it as a persisted monitor
//      (`persist: { stateDir, leaseMs }`, docs/persistence.md) and is killed
//      with SIGKILL; the server still answers with no host; the next session
//      (the demo itself, with fresh registries) finds it with
//      `recover({ stateDir })`, shows it in `/tasks` under its original id,
//      gets one digest notification for the lines printed while no host ran,
//      sees a new request's log line as an event, stops it with `cancel()`,
//      and checks by pid that no process of it survives.
//
// Every child process has a time limit (its process group is killed when it
// runs over), and a watchdog fails the whole demo if it hangs.
//
// Run: `npm run demo` (builds first) or `node examples/demo.mjs`.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { MonitorRegistry, RECOMMENDED_SIGNAL, blockedSleepMessage, validateMonitorParams } from '../index.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const t0 = Date.now()

// ---------------------------------------------------------------- helpers

const stamp = () => `+${((Date.now() - t0) / 1000).toFixed(2)}s`.padStart(7)
const indent = (text, pad) => text.split('\n').map((line) => (line ? pad + line : line)).join('\n')
const heading = (text) => console.log(`\n== ${text} ==\n`)
/** Narration: what the "user" or the demo itself does (not CLI output). */
const say = (text) => console.log(`${stamp()}  -- ${text}`)

/** The CLI's formatDuration(ms, { hideTrailingZeros: true }): 850ms, 1.2s, 3s, 1m 5s, 2h 1s. */
function formatDuration(ms) {
  if (ms <= 0) return '0s'
  if (ms < 1000) return `${Math.round(ms)}ms`
  const seconds = ms / 1000
  if (seconds < 60) {
    const fixed = seconds.toFixed(1)
    if (Number(fixed) >= 60) return '1m'
    return `${fixed.endsWith('.0') ? fixed.slice(0, -2) : fixed}s`
  }
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  return [h && `${h}h`, m && `${m}m`, s && `${s}s`].filter(Boolean).join(' ')
}

const events = (n) => `${n} event${n === 1 ? '' : 's'}`

/** Status labels of the monitor rows of `/tasks` (CONTRACT.md §2.17). */
function statusLabel(entry) {
  const n = entry.eventCount
  switch (entry.status) {
    case 'running':
      return `running (${events(n)})`
    case 'completed':
      return entry.error ? `completed (${entry.error}, ${events(n)})` : `completed (exit ${entry.exitCode ?? '?'}, ${events(n)})`
    case 'failed':
      return `failed: ${entry.error ?? 'unknown error'} (${events(n)})`
    case 'cancelled':
      return `cancelled (${events(n)})`
  }
}

/** The non-interactive `/tasks` text (CONTRACT.md §2.17); monitors have no output path. */
function tasksText(registry) {
  const entries = [...registry.getAll()].sort((a, b) => a.startTime - b.startTime)
  if (entries.length === 0) return 'No background tasks.'
  const now = Date.now()
  const rows = entries.map((e) => {
    const runtime = formatDuration((e.endTime ?? now) - e.startTime)
    const pid = e.pid !== undefined ? ` pid=${e.pid}` : ''
    return `[${e.monitorId}] ${statusLabel(e)}  ${runtime}${pid}  ${e.description}`
  })
  return [`Background tasks (${entries.length} total)`, '', ...rows].join('\n')
}

function showTasks(registry) {
  console.log(`${stamp()}  > /tasks\n`)
  console.log(indent(tasksText(registry), '    '))
  console.log()
}

// ---------------------------------------------------------------- 1. guards

console.log('taskstream demo: an agent CLI with three background monitors')

// The recommended setting for agent CLIs (API.md §6.7), exported by the addon:
// lines that look important are never dropped by the throttle and bring the
// lines around them (a stack trace, an assertion's detail); a window of a
// second carries them with at most one ordinary line; what was dropped is
// summarised by template in the next notification; what is held at the end
// rides in the terminal notification.
const SIGNAL = RECOMMENDED_SIGNAL

// Commands run with cwd = the package root, so the fixture paths stay short.
const monitors = {
  logs: {
    command: 'bash ./examples/fixtures/noisy-logs.sh',
    description: 'api service logs',
    idleTimeoutMs: 10_000,
    ...SIGNAL,
  },
  silent: {
    command: 'sleep 30',
    description: 'wait for build output',
    idleTimeoutMs: 1_500,
  },
  dev: {
    command: 'node ./examples/fixtures/dev-server.mjs',
    description: 'dev server',
    idleTimeoutMs: 60_000,
    // One notification once its output stops for 400 ms (API.md §6.2).
    settleMs: 400,
  },
}

heading('1. Guards: what the CLI checks before it runs anything')
const ctx = { workspaceDirs: [root] }
const guard = (what, subject, result, okText, noText = 'rejected') => {
  console.log(`  ${what.padEnd(22)} ${subject.padEnd(44)} -> ${result === null ? okText : noText}`)
  if (result !== null) console.log(indent(result, '        '))
}
for (const m of Object.values(monitors)) {
  const params = { command: m.command, description: m.description, idle_timeout_ms: m.idleTimeoutMs, directory: root }
  guard('validateMonitorParams', JSON.stringify(m.command), validateMonitorParams(params, ctx), 'ok')
}
for (const command of ['npm run dev & tail -f server.log', 'tail -f $(ls -t logs/*.log | head -1)']) {
  guard('validateMonitorParams', JSON.stringify(command), validateMonitorParams({ command, directory: root }, ctx), 'ok')
}
guard('validateMonitorParams', '"tail -f app.log" in directory /etc', validateMonitorParams({ command: 'tail -f app.log', directory: '/etc' }, ctx), 'ok')
// The shell tool's foreground-sleep guard (a monitor is what it points to).
guard('blockedSleepMessage', '"sleep 30"', blockedSleepMessage('sleep 30'), 'allowed', 'refused in the foreground')
const hatch = 'sleep 30 # intentional-sleep: wait for the API rate limit to reset'
guard('blockedSleepMessage', JSON.stringify(hatch), blockedSleepMessage(hatch), 'allowed (escape hatch)')

// ---------------------------------------------------------------- 2. monitors

heading('2. Monitors: started natively, notifications as the CLI shows them')

const registry = new MonitorRegistry()

// Monitors never keep Node alive (like the TypeScript tool's unref'd timers),
// and a pending Promise does not either: this ref'd watchdog timer holds the
// event loop open until the demo is done, and fails the demo if it hangs.
// Section 5 registers the clean-up of its child process and persisted task here.
const cleanups = []
const watchdog = setTimeout(() => {
  console.error('demo: timed out waiting for the monitors to settle')
  registry.abortAll({ notify: false })
  for (const cleanup of cleanups) cleanup()
  process.exit(1)
}, 25_000)

const terminalSeen = new Map() // monitorId -> status
const terminalWaiters = new Map() // monitorId -> resolve
const settled = (id) =>
  new Promise((resolve) => {
    if (terminalSeen.has(id)) resolve(terminalSeen.get(id))
    else terminalWaiters.set(id, resolve)
  })
let firstEventShown = false
let devId

registry.setNotificationCallback((displayText, modelText, meta) => {
  console.log(`${stamp()}  ${displayText}`)
  const terminal = meta.type === 'terminal'
  if (terminal || meta.type === 'settled' || !firstEventShown) {
    firstEventShown = true
    console.log(indent(modelText, '            '))
  }
  if (terminal) {
    console.log(`            meta.end: ${JSON.stringify(meta.end)}`)
    terminalSeen.set(meta.monitorId, meta.status)
    terminalWaiters.get(meta.monitorId)?.(meta.status)
  }
})

// The CLI finds `node` on PATH; make sure it is the one running this demo.
const env = { PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` }
const started = {}
for (const [key, m] of Object.entries(monitors)) {
  const entry = registry.start({ ...m, cwd: root, env })
  started[key] = entry
  if (key === 'dev') devId = entry.id
  // The monitor tool's returnDisplay.
  console.log(`${stamp()}  Monitor started: ${m.description} (${entry.id})`)
}

// The agent waits for the dev server's ready line: one bounded wait, judged
// in Rust on every line (throttled-out ones too), instead of `sleep 5` or a
// polling loop. Then it sends a request: the request log comes back as an event.
const devSettled = settled(started.dev.id)
say(`agent: registry.waitFor('${started.dev.id}', { match: 'ready on (http://\\S+)', timeoutMs: 10000 })`)
const ready = await registry.waitFor(started.dev.id, { match: 'ready on (http://\\S+)', timeoutMs: 10_000 })
say(`waitFor resolved: ${JSON.stringify(ready)}`)
const url = ready.reason === 'match' ? /ready on (http:\/\/\S+)/.exec(ready.line)?.[1] : null
if (url) {
  const status = await new Promise((resolve) => {
    http
      .get(`${url}/health`, { agent: false }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode))
      })
      .on('error', (err) => resolve(err.code ?? err.message))
  })
  say(`the demo requested ${url}/health -> ${status}`)
}
// Or by the port its tree listens on, for servers that print nothing useful (API.md §6.8;
// Linux for now): the ports are read from the tree's sockets, not from its output.
if (process.platform === 'linux') {
  const byPort = await registry.waitFor(started.dev.id, { port: true, timeoutMs: 10_000 })
  say(`agent: registry.waitFor('${started.dev.id}', { port: true }) resolved: ${JSON.stringify(byPort)}; entry.ports: ${JSON.stringify(started.dev.ports)}`)
}

// The log producer fails and the silent command idles out on their own; the
// dev server's output settles (a settled notification above).
await Promise.all([settled(started.logs.id), settled(started.silent.id)])
await registry.waitFor(started.dev.id, { quietMs: 500, timeoutMs: 5_000 })
console.log()
showTasks(registry)

// The dev server would run forever: the user stops it (as /tasks or the
// Background tasks dialog would).
if (started.dev.status === 'running') {
  say(`user stops the dev server: registry.cancel('${started.dev.id}')`)
  registry.cancel(started.dev.id)
}
await devSettled

heading('3. Final state')
showTasks(registry)

// ---------------------------------------------------------------- 5. terminal

heading('4. Terminal mode: a program that only asks on a terminal')

const installer = registry.start({
  command: 'bash ./examples/fixtures/installer.sh',
  description: 'installer',
  cwd: root,
  env,
  terminal: { cols: 60, rows: 8 },
  settleMs: 400,
})
console.log(`${stamp()}  Monitor started: installer (${installer.id}), under a 60x8 pseudo-terminal`)
// The question has no newline: no line event carries it. The agent waits for
// the output to go quiet, then reads the screen.
await registry.waitFor(installer.id, { quietMs: 300, timeoutMs: 10_000 })
const asked = registry.screen(installer.id)
say(`agent reads registry.screen(): ${JSON.stringify(asked.text)} (cursor row ${asked.cursor.row}, col ${asked.cursor.col})`)
if (asked.text.includes('[y/N]')) {
  say("agent answers: registry.write(id, 'y\\r')")
  registry.write(installer.id, 'y\r')
}
await registry.waitFor(installer.id, { match: 'setup: done', timeoutMs: 10_000 })
await registry.waitFor(installer.id, { quietMs: 600, timeoutMs: 10_000 })
say(`the installer keeps running: registry.cancel('${installer.id}')`)
registry.cancel(installer.id)
await settled(installer.id)

const stats = Object.values({ ...started, installer })
  .map(
    (e) =>
      `${e.description}: ${e.bytesRead} bytes read, ${e.linesSeen} lines seen, ${e.eventCount} delivered, ${e.droppedLines} dropped; ended by ${e.end?.by} (${e.end?.reason}${e.end?.via ? `, via ${e.end.via}` : ''})`,
  )
  .join('\n')
console.log(`Native counters (bytesRead, linesSeen are taskstream extras):\n${indent(stats, '  ')}`)

// ---------------------------------------------------------------- 5. limits

heading('5. Task control: limits on a runaway test, a restart')

// A leaking test run under limits on its whole tree (API.md §6.8): past memoryBytes the kernel
// stops it and the task fails with end.limit 'memory'; the host and the other tasks go on.
// Where the host cannot enforce limits, start() throws saying why and nothing starts.
try {
  const leaky = registry.start({
    command: `node -e "const kept = []; setInterval(() => kept.push(Buffer.alloc(8 << 20, 1)), 10)"`,
    description: 'leaky test',
    limits: { memoryBytes: 128 << 20, cpuPercent: 100, maxProcesses: 64 },
  })
  console.log(`${stamp()}  Monitor started: leaky test (${leaky.id}), limits: 128 MiB, one core, 64 processes`)
  await settled(leaky.id)
  say(`leaky test ended: ${JSON.stringify(leaky.end)}; usage: ${JSON.stringify(leaky.usage)}`)
} catch (error) {
  say(`limits are not available here: ${error.message}`)
}

// A restart (API.md §6.8): the same command and options under the same id; the old run ends as
// 'restarted' (its tree gone, as a cancel leaves it) and the event count goes on.
const watcher = registry.start({
  command: `node -e "console.log('test watcher up, pid ' + process.pid); setInterval(() => {}, 1000)"`,
  description: 'test watcher',
})
await registry.waitFor(watcher.id, { match: 'test watcher up', timeoutMs: 10_000 })
const rerun = registry.restart(watcher.id)
say(`restarted ${rerun.id}: the old run ended ${JSON.stringify(watcher.end)}`)
const up = await registry.waitFor(rerun.id, { match: 'test watcher up', timeoutMs: 10_000 })
say(`the new run is up (${up.reason}); events so far: ${rerun.eventCount}`)
registry.cancel(rerun.id)

// ---------------------------------------------------------------- 6. persistence

heading('6. A dev server that survives a CLI restart')

// Session 1 is a separate CLI process (examples/persist-session.mjs): it starts
// the dev server as a persisted monitor (docs/persistence.md), waits for its
// ready line, and reports. Then it is killed with SIGKILL, the crash case.
const LEASE_MS = 60_000
const stateRoot = mkdtempSync(join(tmpdir(), 'taskstream-demo-')) // 0700
const stateDir = join(stateRoot, 'tasks')
let session2 // the registry that recovers the dev server
let recovered // what session 1 started: { id, pid, url, keeper, tag, cliPid }

/** Exits the demo with an error (the persisted task is cleaned up first). */
function fail(message) {
  console.error(`demo: ${message}`)
  for (const cleanup of cleanups) cleanup()
  process.exit(1)
}

/** True while `pid` runs (a zombie counts as gone). */
function isAlive(pid) {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return true // no /proc (macOS): kill(0) said it exists
  }
}

/** Pids of live processes tagged with the task's environment tag (Linux; [] elsewhere). */
function tagged(tag) {
  if (process.platform !== 'linux') return []
  const needle = `TASKSTREAM_TASK_ID=${tag}\0`
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return `${readFileSync(`/proc/${name}/environ`, 'latin1')}\0`.includes(needle) && isAlive(Number(name))
      } catch {
        return false
      }
    })
    .map(Number)
}

/** Polls `check` every 20 ms until it is true, or fails the demo at the deadline. */
async function until(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** GET with a 5 s limit: `{ status, body }` or `{ error }`. */
function get(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 5000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('timeout', () => req.destroy(new Error('timed out')))
    req.on('error', (err) => resolve({ error: err.code ?? err.message }))
  })
}

say(`session 1: a CLI process starts the dev server with persist: { stateDir, leaseMs: ${LEASE_MS} }`)
const session1 = spawn(process.execPath, [join(root, 'examples', 'persist-session.mjs'), stateDir, String(LEASE_MS)], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true, // its own process group, killed whole on a timeout
})
const session1Exit = new Promise((resolve) => session1.on('exit', (code, signal) => resolve({ code, signal })))
session1.stderr.on('data', (d) => process.stderr.write(d))
// If the demo fails from here on, nothing it started may outlive it: session 1's
// process group is killed, and the dev server is recovered and cancelled (its
// 60 s lease would end it anyway).
cleanups.push(() => {
  if (session1.exitCode === null && session1.signalCode === null) {
    try {
      process.kill(-session1.pid, 'SIGKILL')
    } catch {}
  }
  try {
    const r = session2 ?? new MonitorRegistry()
    if (!session2) r.recover({ stateDir })
    r.abortAll({ notify: false })
  } catch {}
})

const session1Timer = setTimeout(() => fail('session 1 did not report within 15 s'), 15_000)
const report = await new Promise((resolve) => {
  let out = ''
  session1.stdout.on('data', (d) => {
    out += d
    if (out.includes('\n')) resolve(out.split('\n')[0])
  })
  session1Exit.then(({ code, signal }) => {
    if (!out.includes('\n')) fail(`session 1 ended (${signal ?? `exit ${code}`}) before reporting`)
  })
})
recovered = JSON.parse(report)
const devUrl = recovered.url
say(`session 1 (pid ${recovered.cliPid}): Monitor started: dev server (persisted) (${recovered.id}); ready on ${devUrl}`)

say(`the CLI crashes: kill -9 ${recovered.cliPid}`)
session1.kill('SIGKILL')
const ended = await session1Exit
clearTimeout(session1Timer)
say(`session 1 ended by ${ended.signal}; no taskstream host is running now`)

// With no host at all, the server still answers, and its request log keeps
// reaching <stateDir>/<id>.log.
const pidAnswer = await get(`${devUrl}/pid`)
if (pidAnswer.error) fail(`the dev server did not answer with no host: ${pidAnswer.error}`)
const serverPid = Number(pidAnswer.body.trim())
say(`the demo requested ${devUrl}/pid -> ${pidAnswer.status}: the server (pid ${serverPid}) still answers, with no host`)
for (const path of ['/api/items', '/health']) {
  const r = await get(`${devUrl}${path}`)
  say(`the demo requested ${devUrl}${path} -> ${r.status ?? r.error}`)
}
const logFile = join(stateDir, `${recovered.id}.log`)
await until(
  () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('GET /health 200'),
  10_000,
  'the request lines in the log file',
)

// Session 2: a new CLI process (here the demo itself) with fresh registries.
console.log()
session2 = new MonitorRegistry()
const digests = []
const eventsSeen = []
let recoveredEnd
const recoveredSettled = new Promise((resolve) => (recoveredEnd = resolve))
session2.setNotificationCallback((displayText, modelText, meta) => {
  console.log(`${stamp()}  ${displayText.replace(/\n/g, '\n         ')}`)
  if (meta.droppedSince !== undefined || meta.type === 'terminal') console.log(indent(modelText, '            '))
  if (meta.droppedSince !== undefined) digests.push(meta.droppedSince)
  if (meta.type === 'event') eventsSeen.push(displayText)
  if (meta.type === 'terminal') {
    console.log(`            meta.end: ${JSON.stringify(meta.end)}`)
    recoveredEnd(meta.status)
  }
})
say('session 2: a new CLI process (here: the demo, with a fresh registry) calls registry.recover({ stateDir })')
const found = session2.recover({ stateDir })
const ids = (list) => list.map((t) => t.monitorId ?? t.id)
say(
  `recover() -> adopted: ${JSON.stringify(ids(found.adopted))}, settled: ${JSON.stringify(ids(found.settled))}, lost: ${JSON.stringify(ids(found.lost))}, corrupt: ${found.corrupt.length}, busy: ${JSON.stringify(found.busy)}`,
)
const adopted = found.adopted.find((t) => t.monitorId === recovered.id)
if (!adopted) fail(`recover() did not adopt ${recovered.id}`)
say(`recovered ${adopted.monitorId}: same id, command ${JSON.stringify(adopted.command)}, pid ${adopted.pid}, started ${formatDuration(Date.now() - adopted.startTime)} ago`)
// The lines printed while no host followed arrive as one digest notification.
await until(() => digests.length > 0, 10_000, 'the digest of the missed lines')
console.log()
showTasks(session2)

// The recovered monitor is followed like an own one: a request's log line
// comes back as an event, and a bounded wait sees it.
const waited = session2.waitFor(recovered.id, { match: 'GET /after-restart 200', timeoutMs: 10_000 })
const after = await get(`${devUrl}/after-restart`)
say(`the demo requested ${devUrl}/after-restart -> ${after.status ?? after.error}`)
say(`waitFor resolved: ${JSON.stringify(await waited)}`)
await until(() => eventsSeen.some((text) => text.includes('GET /after-restart 200')), 10_000, 'the request line as an event')

say(`user stops the dev server: registry.cancel('${recovered.id}')`)
session2.cancel(recovered.id)
await recoveredSettled
const survivors = () =>
  [...new Set([serverPid, adopted.pid, recovered.keeper])].filter(isAlive).concat(tagged(recovered.tag)).filter((p, i, a) => a.indexOf(p) === i)
await until(() => survivors().length === 0, 10_000, "the dev server's processes to end")
const refused = await get(`${devUrl}/pid`)
const pids = [...new Set([serverPid, adopted.pid])].join(', ')
say(
  `no process survives: dev server pid ${pids} and keeper pid ${recovered.keeper} are gone${process.platform === 'linux' ? `, no process carries the task's tag` : ''}; ${devUrl}/pid -> ${refused.error ?? refused.status}`,
)
console.log()
showTasks(session2)
// The registry forgets a persisted task's files on its own threads shortly after the keeper
// recorded the end (its last cursor, then the files, the lock last): retried while it does.
rmSync(stateRoot, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 })

// Shutdown path of a CLI: nothing should be running now, but be sure.
registry.abortAll({ notify: false })
clearTimeout(watchdog)
console.log(`\ndemo finished in ${formatDuration(Date.now() - t0)}`)
