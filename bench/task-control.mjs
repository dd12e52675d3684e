// Task control (API.md §6.8, issue 34): how soon after the fact each control acts, measured
// from outside on real processes, BENCH_CONTROL_RUNS [15] rounds, medians and maxima.
//
//   timeoutMs   a monitor and a background shell on `sleep 30` with timeoutMs 300: from the
//               deadline (the start() call + 300 ms) to the terminal notification / `done`.
//               Beside them, the pure-JavaScript way: child_process.spawn with a setTimeout that
//               kills it, from the deadline to the child's 'exit' event.
//   port        a background shell whose grandchild (a Node started by the shell) listens on a free port:
//               from the grandchild's listen() callback (it prints Date.now()) to the moment
//               waitFor({ port: true }) resolves.
//   memory      a monitor on a Node that allocates 8 MiB every 10 ms under limits.memoryBytes
//               64 MiB: from start() to the terminal notification (the allocation passes the
//               limit about 80 ms in), Linux with cgroups only.
// The issue's goals: a deadline within 100 ms, a port within 100 ms of listen(), a memory kill
// within 1 s. BENCH_BINARY=<path> picks the binary; a default run replaces the task-control
// section of bench/RESULTS.md.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, waitForQuiet, writeSection } from './lib/report.mjs'

const RUNS = envInt('BENCH_CONTROL_RUNS', 15)
const DEADLINE_MS = 300
const MIB = 1 << 20
const { MonitorRegistry, BackgroundShellRegistry, executeBackground } = loadTaskstream()

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-bench-control-'))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Resolves with Date.now() when `check` holds (polled each ms), or rejects after `timeoutMs`. */
function when(check, timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const tick = () => {
      if (check()) return resolve(Date.now())
      if (Date.now() - started > timeoutMs) return reject(new Error('timed out'))
      setTimeout(tick, 1)
    }
    tick()
  })
}

async function monitorTimeout() {
  const registry = new MonitorRegistry()
  let terminalAt
  registry.setNotificationCallback((_d, _m, meta) => {
    if (meta.type === 'terminal') terminalAt = Date.now()
  })
  const started = Date.now()
  const entry = registry.start({ command: 'sleep 30', timeoutMs: DEADLINE_MS })
  await when(() => terminalAt !== undefined)
  if (entry.end?.reason !== 'timeout') throw new Error(`monitor ended by ${JSON.stringify(entry.end)}`)
  return terminalAt - (started + DEADLINE_MS)
}

async function shellTimeout() {
  const registry = new BackgroundShellRegistry()
  const started = Date.now()
  const handle = executeBackground({ command: 'sleep 30', cwd: scratch, outputDir: join(scratch, 'out'), registry, timeoutMs: DEADLINE_MS })
  const result = await handle.done
  const doneAt = Date.now()
  if (result.end.reason !== 'timeout') throw new Error(`shell ended by ${JSON.stringify(result.end)}`)
  return doneAt - (started + DEADLINE_MS)
}

async function javascriptTimeout() {
  const started = Date.now()
  const child = spawn('bash', ['-c', 'sleep 30'], { detached: true, stdio: 'ignore' })
  const timer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), DEADLINE_MS)
  await new Promise((resolve) => child.on('exit', resolve))
  clearTimeout(timer)
  return Date.now() - (started + DEADLINE_MS)
}

async function freePort() {
  const server = createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function portWait() {
  const registry = new BackgroundShellRegistry()
  const port = await freePort()
  const stamp = join(scratch, `listened-${port}`)
  const listener = `require('net').createServer().listen(${port}, '127.0.0.1', () => require('fs').writeFileSync('${stamp}', String(Date.now())))`
  const handle = executeBackground({ command: `sleep 0.3; node -e "${listener}" & wait`, cwd: scratch, outputDir: join(scratch, 'out'), registry })
  const result = await registry.waitFor(handle.shellId, { port: true, timeoutMs: 20_000 })
  const resolvedAt = Date.now()
  registry.abortAll()
  await handle.done
  if (result.reason !== 'port' || result.port !== port) throw new Error(`waitFor gave ${JSON.stringify(result)}`)
  return resolvedAt - Number(readFileSync(stamp, 'utf8'))
}

async function memoryKill() {
  const registry = new MonitorRegistry()
  let terminalAt
  registry.setNotificationCallback((_d, _m, meta) => {
    if (meta.type === 'terminal') terminalAt = Date.now()
  })
  const started = Date.now()
  const entry = registry.start({
    command: `node -e "const a = []; setInterval(() => a.push(Buffer.alloc(8 << 20, 1)), 10)"`,
    limits: { memoryBytes: 64 * MIB },
  })
  await when(() => terminalAt !== undefined)
  if (entry.end?.limit !== 'memory') throw new Error(`allocator ended by ${JSON.stringify(entry.end)}`)
  return terminalAt - started
}

function limitsAvailable() {
  try {
    const registry = new MonitorRegistry()
    const entry = registry.start({ command: 'true', limits: { maxProcesses: 10 } })
    registry.abortAll({ notify: false })
    return entry !== undefined
  } catch (error) {
    return error.message
  }
}

const facts = machineFacts()
const quiet = await waitForQuiet()
const measures = {
  'timeoutMs, monitor (deadline → terminal notification)': monitorTimeout,
  'timeoutMs, background shell (deadline → done)': shellTimeout,
  'JavaScript: spawn + setTimeout kill (deadline → exit event)': javascriptTimeout,
  'port wait (listen() → waitFor resolves)': process.platform === 'linux' ? portWait : undefined,
}
const limits = process.platform === 'linux' ? limitsAvailable() : 'not Linux'
if (limits === true) measures['memoryBytes 64 MiB (start() → terminal notification)'] = memoryKill
const rows = []
for (const [name, measure] of Object.entries(measures)) {
  if (!measure) continue
  const values = []
  for (let i = 0; i < RUNS; i++) {
    values.push(await measure())
    await sleep(20)
  }
  rows.push([name, `${median(values).toFixed(0)} ms`, `${Math.max(...values).toFixed(0)} ms`])
  console.log(`${name}: median ${median(values)} ms, max ${Math.max(...values)} ms`)
}
rmSync(scratch, { recursive: true, force: true })

const markdown = [
  '## Task control (`bench/task-control.mjs`)',
  '',
  `API.md §6.8: how soon each control acts, ${RUNS} rounds each, measured from outside with \`Date.now()\`. Goals (issue 34): a deadline within 100 ms, a port within 100 ms of \`listen()\`, a memory kill within 1 s.${limits === true ? '' : ` Limits not measured here: ${limits}.`}`,
  '',
  factsMarkdown(facts, { Binary: binaryFacts(), 'Machine before the run': quiet }),
  '',
  table(['Measure', 'Median', 'Max'], rows),
].join('\n')
console.log(`\n${markdown}`)
if (mayWriteResults(['BENCH_CONTROL_RUNS'])) console.log(`\nwrote ${writeSection('task-control', markdown)}`)
process.exit(0)
