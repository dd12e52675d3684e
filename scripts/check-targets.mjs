// Type-checks the crate for every shipped target other than this machine's,
// with warnings denied: `npm run test:targets` (called by .ci/run).
//
// Only the host's standard library comes with rustup here, and no other can
// be downloaded, so the check uses Debian's `rustc-web`/`cargo-web` toolchain
// and its standard-library sources (`rust-web-src`) with `-Zbuild-std`
// (RUSTC_BOOTSTRAP=1). The script installs those three packages when they
// are missing (as root, with apt-get), and builds into target/cross, which
// keeps each target's standard library between runs.
//
// TARGETS=<comma list> checks a subset.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const ALL = [
  'aarch64-unknown-linux-gnu',
  'x86_64-unknown-linux-musl',
  'x86_64-apple-darwin',
  'aarch64-apple-darwin',
  'x86_64-pc-windows-msvc',
]
const targets = process.env.TARGETS ? process.env.TARGETS.split(',').filter(Boolean) : ALL
const RUSTC = '/usr/bin/rustc'
const CARGO = '/usr/bin/cargo'
const STD_SRC = '/usr/lib/rustlib/src/rust/library/std'

function ensureToolchain() {
  if (existsSync(RUSTC) && existsSync(CARGO) && existsSync(STD_SRC)) return
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`test:targets needs Debian's rustc-web, cargo-web and rust-web-src (${RUSTC}, ${CARGO}, ${STD_SRC})`)
  }
  if (process.getuid?.() !== 0) {
    throw new Error('test:targets: install rustc-web cargo-web rust-web-src (apt-get, as root) first')
  }
  console.log('== installing rustc-web cargo-web rust-web-src (Debian)')
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' })
  execFileSync('apt-get', ['install', '-y', '-qq', 'rustc-web', 'cargo-web', 'rust-web-src'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
}

ensureToolchain()
let failed = 0
for (const target of targets) {
  const started = Date.now()
  const run = spawnSync(
    CARGO,
    ['check', '--quiet', '--locked', '-Zbuild-std=std,panic_unwind', '--target', target, '--lib'],
    {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...process.env,
        RUSTC,
        RUSTC_BOOTSTRAP: '1',
        // A musl cdylib needs a dynamically linked C runtime, or cargo drops it.
        RUSTFLAGS: target.endsWith('-musl') ? '-D warnings -C target-feature=-crt-static' : '-D warnings',
        CARGO_TARGET_DIR: join(root, 'target', 'cross'),
      },
    },
  )
  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  if (run.status === 0) console.log(`ok   ${target} (${seconds} s)`)
  else {
    failed++
    console.log(`FAIL ${target} (${seconds} s)`)
  }
}
console.log(`${targets.length - failed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
