// Runs the external processes of the test scripts (scripts/*.mjs): every one has a time limit,
// and runs in a process group of its own (a new session), so that on a timeout the whole tree is
// killed (SIGTERM to the group, SIGKILL to it 5 s later) and the run fails with a message that
// names the step. A group still alive when its leader exits is killed too (nothing a step starts
// outlives it in the group), and so is every live group when this script ends or is interrupted.
//
// What leaves the group (a daemon's setsid, Wine's processes and its server) is not reached by
// this: the caller cleans that up itself (test-windows.mjs ends its Wine prefix after each step).
// For the same reason the result never waits on a pipe a leaver may still hold: once the leader
// has exited and the group is killed, output is collected for at most 2 s more.
//
//   await run('cargo test (arm64 build)', 'cargo', ['test', ...], { timeoutMs: 20 * MIN })
//
// Options: timeoutMs (required), cwd, env, stdio ('inherit' by default; an array as for spawn),
// capture (collect stdout as text, stderr inherited), input (text for stdin), check (default
// true: throw unless the exit status is 0), onSpawn (called with the ChildProcess), keepGroup
// (true: the group is not killed when its leader exits, only on a timeout). Returns
// { status, signal, stdout, ms, timedOut }.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'

export const SEC = 1000
export const MIN = 60 * SEC

/** Leaders (= process group ids) of the groups started here and not yet known empty. */
const live = new Set()

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal)
  } catch {}
}

let hooked = false
function hookExit() {
  if (hooked) return
  hooked = true
  process.on('exit', () => {
    for (const pid of live) killGroup(pid, 'SIGKILL')
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      for (const pid of live) killGroup(pid, 'SIGKILL')
      process.exit(128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 })[signal])
    })
  }
}

export class StepError extends Error {
  constructor(message, result) {
    super(message)
    this.result = result
  }
}

const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`

/** Runs `command args` as step `step`; see the top of this file. */
export function run(step, command, args = [], options = {}) {
  const { timeoutMs, cwd, env, capture = false, input, check = true } = options
  if (!(timeoutMs > 0)) throw new Error(`run(${step}): timeoutMs is required`)
  hookExit()
  const stdio = options.stdio ?? [input === undefined ? 'ignore' : 'pipe', capture ? 'pipe' : 'inherit', 'inherit']
  const started = Date.now()
  return new Promise((resolve, reject) => {
    let child
    try {
      child = spawn(command, args, { cwd, env, stdio, detached: true })
    } catch (error) {
      reject(new StepError(`${step}: could not start ${command}: ${error.message}`, null))
      return
    }
    options.onSpawn?.(child)
    const chunks = []
    child.stdout?.on('data', (chunk) => chunks.push(chunk))
    if (input !== undefined) child.stdin.end(input)
    let timedOut = false
    let spawnError = null
    let killer = null
    if (child.pid) live.add(child.pid)
    const timer = setTimeout(() => {
      timedOut = true
      console.error(`== TIMEOUT: ${step} still running after ${seconds(timeoutMs)}: killing its process tree (group ${child.pid})`)
      killGroup(child.pid, 'SIGTERM')
      killer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), 5 * SEC)
    }, timeoutMs)
    child.on('error', (error) => {
      spawnError = error
    })
    let exit = null
    let finished = false
    const finish = () => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      clearTimeout(killer)
      live.delete(child.pid)
      const ms = Date.now() - started
      const result = {
        status: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: capture ? Buffer.concat(chunks).toString('utf8') : undefined,
        ms,
        timedOut,
      }
      if (spawnError && !exit) {
        reject(new StepError(`${step}: could not start ${command}: ${spawnError.message}`, result))
      } else if (timedOut) {
        reject(new StepError(`${step}: timed out after ${seconds(timeoutMs)} (its process tree was killed)`, result))
      } else if (check && result.status !== 0) {
        reject(new StepError(`${step}: ${command} exited with ${result.status ?? result.signal} after ${seconds(ms)}`, result))
      } else resolve(result)
    }
    child.on('exit', (code, signal) => {
      exit = { code, signal }
      // Whatever the leader left in its group goes with it.
      if (options.keepGroup !== true) killGroup(child.pid, 'SIGKILL')
      // Its output pipes close soon, unless a process that left the group holds one.
      setTimeout(() => {
        child.stdout?.destroy()
        child.stdin?.destroy()
        finish()
      }, 2 * SEC)
    })
    child.on('close', () => {
      if (exit) finish()
    })
    if (!child.pid) child.on('error', () => finish())
  })
}

/** `run` with stdout captured; resolves to the text. */
export async function output(step, command, args, options = {}) {
  return (await run(step, command, args, { ...options, capture: true })).stdout
}

/** Runs `main`, printing a StepError's message (no stack) and exiting 1 on any failure. */
export async function main(body) {
  try {
    await body()
  } catch (error) {
    console.error(error instanceof StepError ? `FAIL ${error.message}` : error)
    process.exit(1)
  }
}

/** Installs the Debian packages of `wanted` ([path, package] pairs) whose path is missing. */
export async function ensureDebianPackages(what, wanted) {
  const { existsSync } = await import('node:fs')
  const missing = wanted.filter(([path]) => !existsSync(path)).map(([, name]) => name)
  if (missing.length === 0) return
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get') || process.getuid?.() !== 0) {
    throw new Error(`${what} needs Debian's ${missing.join(', ')} (apt-get, as root)`)
  }
  console.log(`== installing ${missing.join(' ')} (Debian)`)
  await run('apt-get update', 'apt-get', ['update', '-qq'], { timeoutMs: 5 * MIN })
  await run(`apt-get install ${missing.join(' ')}`, 'apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
    timeoutMs: 15 * MIN,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
}

// As a command, for shell scripts (.ci/run, scripts/fuzz.sh):
//
//   node scripts/lib/run.mjs STEP SECONDS -- COMMAND [ARG...]
//
// runs COMMAND as step STEP under the same rules, prints the step's duration, and exits with
// COMMAND's status (124 after a timeout, as coreutils' timeout does; 128 + n for a signal n).
/** The CPU time of the waited-for children of this process (Linux: /proc/self/stat's cutime and
 * cstime), as `, CPU N s`: on a shared machine a step's CPU time says more than its wall time. */
function childrenCpu() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // Fields 16 and 17 of proc(5), counted from 1; the list starts at field 3. Ticks of 1/100 s.
    const ticks = Number(fields[13]) + Number(fields[14])
    return Number.isFinite(ticks) ? `, CPU ${(ticks / 100).toFixed(0)} s` : ''
  } catch {
    return ''
  }
}

const invoked = process.argv[1] && (await import('node:url')).pathToFileURL(process.argv[1]).href === import.meta.url
if (invoked) {
  const [step, limit, dashes, command, ...args] = process.argv.slice(2)
  if (!step || !(Number(limit) > 0) || dashes !== '--' || !command) {
    console.error('usage: node scripts/lib/run.mjs STEP SECONDS -- COMMAND [ARG...]')
    process.exit(2)
  }
  const { constants } = await import('node:os')
  let code
  try {
    const result = await run(step, command, args, { timeoutMs: Number(limit) * SEC, stdio: 'inherit', check: false })
    code = result.status ?? 128 + (constants.signals[result.signal] ?? 0)
    console.log(`== ${step}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${seconds(result.ms)}${childrenCpu()}`)
  } catch (error) {
    console.log(`== ${step}: FAILED: ${error.message}`)
    code = error.result?.timedOut ? 124 : 1
  }
  process.exit(code)
}
