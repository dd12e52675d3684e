// Shared test helpers: processes with a timeout whose whole tree is killed on timeout, and copies of
// the real @qwen-code/qwen-code 0.24.4 package installed by e2e/setup.mjs.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const here = path.dirname(fileURLToPath(import.meta.url))
export const integrationDir = path.join(here, '..')
export const binPath = path.join(integrationDir, 'bin', 'taskstream-qwen.mjs')
export const installedQwen = path.join(integrationDir, 'e2e', 'node_modules', '@qwen-code', 'qwen-code')

/**
 * Runs a command; resolves { code, signal, stdout, stderr, timedOut }. The child leads its own
 * process group, and on timeout the whole group is killed (SIGKILL).
 */
export function run(command, args, { timeoutMs = 60_000, env = process.env, cwd, input } = {}) {
  const child = spawn(command, args, { cwd, env, detached: process.platform !== 'win32', stdio: ['pipe', 'pipe', 'pipe'] })
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

export function requireInstalledQwen() {
  const pkg = path.join(installedQwen, 'package.json')
  if (!fs.existsSync(pkg)) {
    throw new Error(`${installedQwen} is missing: run \`node integrations/qwen-code/e2e/setup.mjs\` (npm run test:qwen does)`)
  }
  return installedQwen
}

/** A fresh copy of the installed package in a temporary folder; returns its package directory. */
export function copyQwen(t) {
  const src = requireInstalledQwen()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'taskstream-qwen-test-'))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const dir = path.join(root, 'node_modules', '@qwen-code', 'qwen-code')
  fs.cpSync(src, dir, { recursive: true, verbatimSymlinks: true })
  return dir
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
