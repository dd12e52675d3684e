// Installs the real @qwen-code/qwen-code the tests drive, exactly as e2e/package-lock.json pins it,
// into e2e/node_modules (about 144 MB; apart from the root install so that the root `npm ci` stays
// small). Skips the install when the pinned version is already there.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const want = JSON.parse(fs.readFileSync(path.join(here, 'package.json'), 'utf8')).dependencies['@qwen-code/qwen-code']
const installed = path.join(here, 'node_modules', '@qwen-code', 'qwen-code', 'package.json')
let have
try {
  have = JSON.parse(fs.readFileSync(installed, 'utf8')).version
} catch {}
if (have === want) {
  console.log(`e2e: @qwen-code/qwen-code ${have} already installed`)
} else {
  console.log(`e2e: npm ci (@qwen-code/qwen-code ${want})`)
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const code = await new Promise((resolve) => {
    const child = spawn(npm, ['ci', '--no-audit', '--no-fund'], {
      cwd: here,
      stdio: 'inherit',
      detached: process.platform !== 'win32',
      shell: process.platform === 'win32',
    })
    const timer = setTimeout(() => {
      console.error('e2e: npm ci timed out after 15 min')
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {}
    }, 15 * 60_000)
    child.on('close', (c) => {
      clearTimeout(timer)
      resolve(c ?? 1)
    })
  })
  if (code !== 0) process.exit(code)
}
