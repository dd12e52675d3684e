// The Debian packages the cross steps need, each as [a file it installs, its name]: one list,
// used by test:targets, test:windows and test:linux-cross (each installs what it misses), and by
// .ci/run, which installs all of them with one apt-get before those steps (`node
// scripts/lib/debian.mjs`).
import { pathToFileURL } from 'node:url'

import { ensureDebianPackages, main } from './run.mjs'

/** Debian's Rust 1.96 toolchain and its standard library's sources (for -Zbuild-std). */
export const TOOLCHAIN = [
  ['/usr/bin/rustc', 'rustc-web'],
  ['/usr/bin/cargo', 'cargo-web'],
  ['/usr/lib/rustlib/src/rust/library/std', 'rust-web-src'],
]

/** test:windows: mingw (the linker) and Wine. */
export const WINDOWS = [
  ['/usr/bin/x86_64-w64-mingw32-gcc', 'gcc-mingw-w64-x86-64'],
  ['/usr/lib/wine/wine64', 'wine64'],
]

/** test:linux-cross: the arm64 linker and C library, qemu-user, musl-gcc. */
export const LINUX_CROSS = [
  ['/usr/bin/aarch64-linux-gnu-gcc', 'gcc-aarch64-linux-gnu'],
  ['/usr/aarch64-linux-gnu/lib/libc.so.6', 'libc6-dev-arm64-cross'],
  ['/usr/bin/qemu-aarch64', 'qemu-user'],
  ['/usr/bin/musl-gcc', 'musl-tools'],
]

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  await main(async () => {
    await ensureDebianPackages('the cross steps', [...TOOLCHAIN, ...WINDOWS, ...LINUX_CROSS])
    console.log('Debian packages of the cross steps: all present')
  })
}
