// Test helpers every integration's suites share (Linux: processes are found through /proc):
// processes with a timeout whose whole tree is killed on timeout, file-tree hashes for byte-exact
// undo checks, and the process-table reads of the containment scenarios.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * Runs a command; resolves { code, signal, stdout, stderr, timedOut }. The child leads its own
 * process group, and on timeout the whole group is killed (SIGKILL).
 */
export function run(command, args, { timeoutMs = 60_000, env = process.env, cwd, input } = {}) {
  const child = spawn(command, args, { cwd, env, detached: process.platform !== 'win32', stdio: ['pipe', 'pipe', 'pipe'] })
  // A child that exits before reading its stdin (tmux's client, say) must not fail the run with EPIPE.
  child.stdin.on('error', () => {})
  child.stdin.end(input ?? '')
  return collect(child, timeoutMs)
}

/**
 * Collects a spawned child's output; resolves { code, signal, stdout, stderr, timedOut } once it
 * closes. On timeout its whole process group is killed.
 */
export function collect(child, timeoutMs) {
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    let timedOut = false
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      timedOut = true
      killTree(child.pid)
    }, timeoutMs)
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, timedOut })
    })
  })
}

export function killTree(pid) {
  if (!pid) return
  try {
    if (process.platform === 'win32') spawn('taskkill', ['/pid', String(pid), '/t', '/f'], { stdio: 'ignore' })
    else process.kill(-pid, 'SIGKILL')
  } catch {}
}

/** sha256 of every file under `dir` (relative path → hash), symlinks by their target text. */
export function treeHashes(dir) {
  const out = new Map()
  const walk = (rel) => {
    for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = path.join(rel, ent.name)
      const abs = path.join(dir, r)
      if (ent.isDirectory()) walk(r)
      else if (ent.isSymbolicLink()) out.set(r, 'link:' + fs.readlinkSync(abs))
      else out.set(r, createHash('sha256').update(fs.readFileSync(abs)).digest('hex') + ':' + (fs.statSync(abs).mode & 0o777).toString(8))
    }
  }
  walk('')
  return out
}

export function diffTrees(a, b) {
  const diffs = []
  for (const [k, v] of a) if (b.get(k) !== v) diffs.push(`${k}: ${v} -> ${b.get(k)}`)
  for (const k of b.keys()) if (!a.has(k)) diffs.push(`${k}: added`)
  return diffs
}

/** Resolves with `read()`'s value once it is truthy (checked every 50 ms), or rejects after timeoutMs. */
export function until(read, what, timeoutMs = 60_000, pollMs = 50) {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const tick = () => {
      let v
      try {
        v = read()
      } catch {}
      if (v) return resolve(v)
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`))
      setTimeout(tick, pollMs)
    }
    tick()
  })
}

export function isAlive(pid) {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  // A zombie is dead for our purposes.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return true
  }
}

/** The environment of a live process (Linux), as an object; {} when it cannot be read. */
export function environOf(pid) {
  try {
    return Object.fromEntries(
      fs
        .readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    )
  } catch {
    return {}
  }
}

const procPids = () => fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number)

/** Pids of live (non-zombie) processes whose argv satisfies `pred`. */
export function pidsWhere(pred) {
  const out = []
  for (const pid of procPids()) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1)
      if (pred(argv) && isAlive(pid)) out.push(pid)
    } catch {}
  }
  return out
}

/** Pids of live processes whose command line is exactly `argv`. */
export const pidsByArgv = (want) => pidsWhere((argv) => argv.length === want.length && argv.every((a, i) => a === want[i]))

/** Pids of live (non-zombie) processes whose environment has `name=value` (Linux; other users' processes are not readable). */
export function pidsWithEnv(name, value) {
  const needle = `\0${name}=${value}\0`
  const out = []
  for (const pid of procPids()) {
    if (pid === process.pid) continue
    try {
      if (`\0${fs.readFileSync(`/proc/${pid}/environ`, 'utf8')}`.includes(needle) && isAlive(pid)) out.push(pid)
    } catch {}
  }
  return out
}

/** Direct children of a process (Linux). */
export function childrenOf(pid) {
  const out = []
  for (const child of procPids()) {
    try {
      const stat = fs.readFileSync(`/proc/${child}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(child)
    } catch {}
  }
  return out
}

/** `pid` and all of its descendants (Linux). */
export function descendants(pid) {
  const out = [pid]
  for (let i = 0; i < out.length; i++) out.push(...childrenOf(out[i]))
  return out
}

/** The CLI's own processes: `pid` and its node descendants (the launcher relaunches itself, here twice). */
export function nodeDescendants(pid) {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    for (const child of childrenOf(out[i])) {
      try {
        if (/node/.test(fs.readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0')[0])) out.push(child)
      } catch {}
    }
  }
  return out
}

/** SIGKILLs each pid (errors ignored). */
export function killPids(pids, signal = 'SIGKILL') {
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {}
  }
}

/**
 * How many of `pids` are alive `observeMs` after `endedAt` (or none earlier), then, with
 * `waitAllDeadMs`, when the last one ended (within that bound). Resolves
 * { survivors, survivorsAtMs, allDeadMs }.
 */
export async function observeSurvivors(pids, endedAt, { observeMs = 2000, waitAllDeadMs = 0 } = {}) {
  const observed = await new Promise((resolve) => {
    const check = () => {
      const alive = pids.filter(isAlive)
      const ms = Date.now() - endedAt
      if (alive.length === 0 || ms >= observeMs) resolve({ alive: alive.length, ms })
      else setTimeout(check, 20)
    }
    check()
  })
  let allDeadMs
  if (waitAllDeadMs > 0) {
    try {
      await until(() => pids.every((p) => !isAlive(p)), 'the task processes to end', waitAllDeadMs)
      allDeadMs = Date.now() - endedAt
    } catch {}
  }
  return { survivors: observed.alive, survivorsAtMs: observed.ms, allDeadMs }
}

/** CPU ticks (utime + stime, all threads) of a process; 0 when it cannot be read. */
export function cpuTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(f[11]) + Number(f[12]) // utime + stime (fields 14 and 15)
  } catch {
    return 0
  }
}

/** The peak RSS of a process in kB (VmHWM); 0 when it cannot be read. */
export function peakRssKb(pid) {
  try {
    return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1])
  } catch {
    return 0
  }
}

/** Resolves once the summed CPU ticks of `pids` stay still for `quietPolls` polls of 100 ms in a row. */
export function cpuQuiet(pids, what, timeoutMs, quietPolls = 3) {
  let last = -1
  let quiet = 0
  return until(() => {
    const now = pids.reduce((n, p) => n + cpuTicks(p), 0)
    quiet = now - last <= 1 ? quiet + 1 : 0
    last = now
    return quiet >= quietPolls
  }, what, timeoutMs, 100)
}

/**
 * The CLI package an e2e suite installed (`e2e/node_modules/<packageName>`): `require()` returns
 * its directory or throws naming the setup to run; `copy(t)` makes a fresh copy in a temporary
 * `node_modules/<packageName>` (removed by `t.after`) and returns its directory.
 */
export function installedPackage(e2eDir, packageName, setupHint) {
  const dir = path.join(e2eDir, 'node_modules', ...packageName.split('/'))
  const require = () => {
    if (!fs.existsSync(path.join(dir, 'package.json'))) throw new Error(`${dir} is missing: ${setupHint}`)
    return dir
  }
  const copy = (t) => {
    const src = require()
    const root = fs.mkdtempSync(path.join(os.tmpdir(), `${packageName.split('/').pop()}-test-`))
    t.after(() => fs.rmSync(root, { recursive: true, force: true }))
    const out = path.join(root, 'node_modules', ...packageName.split('/'))
    fs.cpSync(src, out, { recursive: true, verbatimSymlinks: true })
    return out
  }
  return { dir, require, copy }
}
