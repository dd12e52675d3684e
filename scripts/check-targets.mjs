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
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { TOOLCHAIN } from './lib/debian.mjs'
import { ensureDebianPackages, main, MIN, run } from './lib/run.mjs'

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

await main(async () => {
  await ensureDebianPackages('test:targets', TOOLCHAIN)
  let failed = 0
  for (const target of targets) {
    const started = Date.now()
    const result = await run(
      `cargo check --target ${target}`,
      CARGO,
      ['check', '--quiet', '--locked', '-Zbuild-std=std,panic_unwind', '--target', target, '--workspace', '--lib', '--bins'],
      {
        cwd: root,
        check: false,
        timeoutMs: 15 * MIN,
        env: {
          ...process.env,
          RUSTC,
          RUSTC_BOOTSTRAP: '1',
          // A musl cdylib needs a dynamically linked C runtime, or cargo drops it.
          RUSTFLAGS: target.endsWith('-musl') ? '-D warnings -C target-feature=-crt-static' : '-D warnings',
          CARGO_TARGET_DIR: join(root, 'target', 'cross'),
          // A check makes no debug info; the build scripts and proc macros it compiles for the
          // host are then the very units the test builds of target/cross (all without debug info)
          // reuse. With CI's line tables they were compiled again there.
          CARGO_PROFILE_DEV_DEBUG: '0',
        },
      },
    )
    const seconds = ((Date.now() - started) / 1000).toFixed(0)
    if (result.status === 0) console.log(`ok   ${target} (${seconds} s)`)
    else {
      failed++
      console.log(`FAIL ${target} (${seconds} s)`)
    }
  }
  console.log(`${targets.length - failed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
})
