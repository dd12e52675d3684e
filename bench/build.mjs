// Builds the RELEASE binary the benchmarks use into bench/.build/, never the
// root taskstream.<platform>.node (which `npm run build` and other engineers'
// builds write). Skips the build when that binary is newer than every source
// file. Waits for any cargo/rustc already running: one build at a time.
//
//   node bench/build.mjs            # build if stale
//   node bench/build.mjs --force    # always build
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { binaryPath, buildDir } from './lib/binding.mjs'
import { runningBuilds } from './lib/report.mjs'
import { copyKeeper } from '../scripts/copy-keeper.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const force = process.argv.includes('--force')

function newestSourceMtime() {
  let newest = 0
  const visit = (path) => {
    const st = statSync(path)
    if (st.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name))
    else newest = Math.max(newest, st.mtimeMs)
  }
  visit(join(root, 'src'))
  for (const file of ['Cargo.toml', 'Cargo.lock', 'build.rs']) {
    if (existsSync(join(root, file))) visit(join(root, file))
  }
  return newest
}

if (!force && existsSync(binaryPath) && statSync(binaryPath).mtimeMs > newestSourceMtime()) {
  console.log(`bench/build: ${binaryPath} is up to date`)
  process.exit(0)
}

for (let waited = 0; ; waited += 5) {
  const busy = runningBuilds()
  if (busy.length === 0) break
  if (waited % 30 === 0) console.log(`bench/build: waiting for a running build to finish: ${busy.join(', ')}`)
  await new Promise((r) => setTimeout(r, 5000))
}

console.log(`bench/build: building the release binary into ${buildDir} (lto, codegen-units=1: this takes a while)`)
const started = Date.now()
execFileSync('npx', ['napi', 'build', '--platform', '--release', '--output-dir', buildDir], {
  cwd: root,
  stdio: 'inherit',
})
// The keeper of persisted tasks beside the addon (bench/persist.mjs starts persisted tasks).
copyKeeper('release', buildDir)
console.log(`bench/build: done in ${((Date.now() - started) / 1000).toFixed(0)} s`)
