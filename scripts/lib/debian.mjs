// The Debian packages the cross steps need, each as [a file it installs, its name]: one list,
// used by test:targets, test:windows and test:linux-cross (each installs what it misses), and by
// .ci/run, which installs all of them with one apt-get before those steps (`node
// scripts/lib/debian.mjs`).
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { ensureDebianPackages, main, MIN, output, run } from './run.mjs'

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

/**
 * A sysroot for rustc-web with Debian's own build of the arm64 standard library beside the host's,
 * made in `dir` (kept between runs) and returned; null, with the reason printed, where it cannot be
 * had (the caller then builds the standard library from source with -Zbuild-std).
 *
 * Debian builds rustc-web for every architecture, and its libstd-rust-web-dev is Multi-Arch: same:
 * the arm64 package of the very version the host's rustc-web depends on holds the rlibs that
 * rustc needs for aarch64-unknown-linux-gnu (rustup's `target add`, which this machine cannot
 * use). It is fetched with apt (the archive's signatures checked; apt learns of arm64 packages
 * once dpkg lists arm64 as a foreign architecture, which is added here) and unpacked, not
 * installed: no arm64 package lands on the machine. This saves the arm64 test build its standard
 * library from source (279 s → 177 s of a cold build on two quiet cores, 2026-11-29). The host's
 * libraries (x86_64, for build scripts and proc macros) are linked in beside it.
 */
export async function arm64StandardLibrary(dir) {
  const target = 'aarch64-unknown-linux-gnu'
  const version = (await output('the version of rustc-web', 'dpkg-query', ['-W', '-f', '${Version}', 'rustc-web'], { timeoutMs: MIN })).trim()
  const sysroot = join(dir, version, 'sysroot')
  const targetLibs = join(sysroot, 'lib', 'rustlib', target)
  if (existsSync(join(targetLibs, 'lib'))) return sysroot
  if (process.getuid?.() !== 0) {
    console.log(`== no arm64 standard library of rustc-web ${version} (apt needs root): building it from source`)
    return null
  }
  const unpacked = join(dir, version, 'unpacked')
  rmSync(join(dir, version), { recursive: true, force: true })
  mkdirSync(unpacked, { recursive: true })
  const foreign = await output('dpkg --print-foreign-architectures', 'dpkg', ['--print-foreign-architectures'], { timeoutMs: MIN })
  if (!foreign.split('\n').includes('arm64')) {
    await run('dpkg --add-architecture arm64', 'dpkg', ['--add-architecture', 'arm64'], { timeoutMs: MIN })
    await run('apt-get update (with arm64)', 'apt-get', ['update', '-qq'], { timeoutMs: 5 * MIN })
  }
  const fetched = await run(
    `apt-get download libstd-rust-web-dev:arm64=${version}`,
    'apt-get',
    ['download', '-qq', '-o', 'APT::Sandbox::User=root', `libstd-rust-web-dev:arm64=${version}`],
    { cwd: join(dir, version), check: false, timeoutMs: 10 * MIN },
  )
  const deb = readdirSync(join(dir, version)).find((name) => name.endsWith('_arm64.deb'))
  if (fetched.status !== 0 || deb === undefined) {
    console.log(`== Debian's arm64 standard library of rustc-web ${version} could not be fetched: building it from source`)
    return null
  }
  await run('dpkg-deb -x (the arm64 standard library)', 'dpkg-deb', ['-x', join(dir, version, deb), unpacked], { timeoutMs: 5 * MIN })
  rmSync(join(dir, version, deb))
  const unpackedLibs = join(unpacked, 'usr', 'lib', 'rustlib', target)
  if (!existsSync(join(unpackedLibs, 'lib'))) throw new Error(`libstd-rust-web-dev:arm64 ${version} has no ${target} libraries`)
  mkdirSync(join(sysroot, 'lib', 'rustlib'), { recursive: true })
  // Build scripts and proc macros run on the host: its libraries are the installed ones.
  symlinkSync('/usr/lib/rustlib/x86_64-unknown-linux-gnu', join(sysroot, 'lib', 'rustlib', 'x86_64-unknown-linux-gnu'))
  symlinkSync(unpackedLibs, targetLibs)
  return sysroot
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  await main(async () => {
    await ensureDebianPackages('the cross steps', [...TOOLCHAIN, ...WINDOWS, ...LINUX_CROSS])
    console.log('Debian packages of the cross steps: all present')
  })
}
