// Setup every integration's e2e suite shares: the real CLI installed exactly as the suite's
// e2e/package-lock.json pins it (into e2e/node_modules, apart from the root install so that the
// root `npm ci` stays small; skipped when the pinned version is there), and tmux for the interactive
// suites (on Linux, as root with apt-get, installed when missing; elsewhere it says that tmux must be
// installed, and the interactive tests are skipped without it).
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/** Runs a command with inherited stdio, leading its own process group, killed (the group) after timeoutMs; resolves its exit code. */
export function runInherited(command, args, { timeoutMs, env = process.env, cwd } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd,
      env,
      stdio: 'inherit',
      detached: process.platform !== 'win32',
      shell: process.platform === 'win32',
    })
    const timer = setTimeout(() => {
      console.error(`e2e: ${command} ${args.join(' ')} timed out after ${Math.round(timeoutMs / 60_000)} min`)
      try {
        if (process.platform === 'win32') spawn('taskkill', ['/pid', String(child.pid), '/t', '/f'], { stdio: 'ignore' })
        else process.kill(-child.pid, 'SIGKILL')
      } catch {}
    }, timeoutMs)
    child.on('error', (err) => {
      clearTimeout(timer)
      console.error(`e2e: ${command}: ${err.message}`)
      resolve(1)
    })
    child.on('close', (c) => {
      clearTimeout(timer)
      resolve(c ?? 1)
    })
  })
}

/** Installs `packageName` as `e2eDir`/package.json pins it (npm ci), unless that version is there. Exits on failure. */
export async function installPinned(e2eDir, packageName) {
  const want = JSON.parse(fs.readFileSync(path.join(e2eDir, 'package.json'), 'utf8')).dependencies[packageName]
  const installed = path.join(e2eDir, 'node_modules', ...packageName.split('/'), 'package.json')
  let have
  try {
    have = JSON.parse(fs.readFileSync(installed, 'utf8')).version
  } catch {}
  if (have === want) {
    console.log(`e2e: ${packageName} ${have} already installed`)
  } else {
    console.log(`e2e: npm ci (${packageName} ${want})`)
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
    const code = await runInherited(npm, ['ci', '--no-audit', '--no-fund'], { cwd: e2eDir, timeoutMs: 15 * 60_000 })
    if (code !== 0) process.exit(code)
  }
}

/** Makes sure tmux is there (see the top of this file). Exits when installing it fails. */
export async function ensureTmux() {
  const tmuxVersion = () => {
    const r = spawnSync('tmux', ['-V'], { encoding: 'utf8', timeout: 10_000 })
    return r.status === 0 ? r.stdout.trim() : undefined
  }

  if (process.platform !== 'win32') {
    const found = tmuxVersion()
    if (found) {
      console.log(`e2e: ${found} found`)
    } else if (process.platform !== 'linux') {
      console.error('e2e: tmux is missing and must be installed (macOS: `brew install tmux`); the interactive tests are skipped without it')
    } else if (process.getuid?.() !== 0 || !fs.existsSync('/usr/bin/apt-get')) {
      console.error('e2e: tmux is missing and must be installed (Debian/Ubuntu, as root: `apt-get install -y tmux`); the interactive tests are skipped without it')
    } else {
      console.log('e2e: tmux is missing: apt-get update && apt-get install -y tmux')
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
      let code = await runInherited('apt-get', ['update'], { env, timeoutMs: 5 * 60_000 })
      if (code === 0) code = await runInherited('apt-get', ['install', '-y', '--no-install-recommends', 'tmux'], { env, timeoutMs: 5 * 60_000 })
      const now = tmuxVersion()
      if (code !== 0 || !now) {
        console.error(`e2e: installing tmux failed (apt-get exit code ${code})`)
        process.exit(code || 1)
      }
      console.log(`e2e: ${now} installed`)
    }
  }
}
