// The two other Linux targets, on this x86_64 machine: `npm run test:linux-cross`
// (called by .ci/run).
//
// * aarch64-unknown-linux-gnu: the Rust tests, built with Debian's
//   gcc-aarch64-linux-gnu as linker and run by qemu-user
//   (`qemu-aarch64 -L /usr/aarch64-linux-gnu`, libc6-dev-arm64-cross). Eight
//   tests are skipped, each for a limit of user-mode emulation, not of the
//   code: without binfmt_misc (not mounted here) a test binary cannot run
//   itself again as a child, which the host-death tests do; qemu-user runs a
//   `posix_spawn` child as a forked copy of itself, so an exec failure
//   reaches the child instead of the caller and the caller may look at the
//   child before its `setsid` (the spawn tests); and
//   qemu's own /proc/self/stat says parent 0 (the process-table test). The
//   native arm64 job of the CI workflow runs them.
// * x86_64-unknown-linux-musl: the cdylib is linked with Debian's musl-gcc
//   and `-C target-feature=-crt-static` (without it cargo drops a musl
//   cdylib). musl-gcc does not search the directory of libgcc_s (the
//   unwinder every Rust cdylib needs), so a link-only directory holding a
//   symlink to it is added to the final link.
//
// Both use Debian's rustc-web toolchain with -Zbuild-std (as test:targets
// does) and build into target/cross, kept between runs. Missing packages
// are installed with apt-get.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const cross = join(root, 'target', 'cross')
const RUSTC = '/usr/bin/rustc'
const CARGO = '/usr/bin/cargo'
const ARM_GCC = '/usr/bin/aarch64-linux-gnu-gcc'
const ARM_ROOT = '/usr/aarch64-linux-gnu'
const QEMU = '/usr/bin/qemu-aarch64'
const MUSL_GCC = '/usr/bin/musl-gcc'
const LIBGCC_S = '/lib/x86_64-linux-gnu/libgcc_s.so.1'

const QEMU_SKIPS = [
  // The test binary runs itself as the host: needs binfmt_misc under qemu-user.
  'core::process::unix::tests_host::children_die_when_the_host_is_sigkilled',
  'core::process::unix::tests_host::kill_all_sync_kills_every_tracked_tree',
  'core::process::unix::tests_host::terminal_children_die_when_the_host_is_sigkilled',
  // qemu-user runs posix_spawn's child as a plain fork: an exec failure is not reported to the
  // caller, and the caller may look at the child before its setsid.
  'core::process::unix::tests_spawn::spawn_pipes_output_and_reports_the_exit_code',
  'core::process::unix::tests_pty::terminal_spawn_failures_track_nothing_and_leak_nothing',
  'core::process::unix::tests_spawn::spawn_failures_are_os_errors_and_track_nothing',
  'core::process::unix::tests_spawn::spawning_and_reaping_leaks_no_descriptors',
  // qemu-user's emulated /proc/self/stat reports parent 0.
  'core::process::unix::tests_tree::the_process_table_sees_this_process',
]

function ensurePackages() {
  const wanted = [
    [RUSTC, 'rustc-web'],
    [CARGO, 'cargo-web'],
    ['/usr/lib/rustlib/src/rust/library/std', 'rust-web-src'],
    [ARM_GCC, 'gcc-aarch64-linux-gnu'],
    [join(ARM_ROOT, 'lib', 'libc.so.6'), 'libc6-dev-arm64-cross'],
    [QEMU, 'qemu-user'],
    [MUSL_GCC, 'musl-tools'],
  ].filter(([path]) => !existsSync(path))
  if (wanted.length === 0) return
  const names = wanted.map(([, name]) => name)
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get') || process.getuid?.() !== 0) {
    throw new Error(`test:linux-cross needs Debian's ${names.join(', ')} (apt-get, as root)`)
  }
  console.log(`== installing ${names.join(' ')} (Debian)`)
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' })
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...names], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
}

const baseEnv = { ...process.env, RUSTC, RUSTC_BOOTSTRAP: '1', CARGO_TARGET_DIR: cross }
const seconds = (started) => `${((Date.now() - started) / 1000).toFixed(0)} s`

function arm64Tests() {
  const started = Date.now()
  const build = spawnSync(
    CARGO,
    [
      'test', '--locked', '--no-run', '--lib', '-Zbuild-std=std,panic_unwind',
      '--target', 'aarch64-unknown-linux-gnu', '--message-format=json-render-diagnostics',
    ],
    {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 256 * 1024 * 1024,
      env: {
        ...baseEnv,
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER: ARM_GCC,
        // Optimised: every instruction is emulated.
        CARGO_PROFILE_DEV_OPT_LEVEL: '2',
        CARGO_PROFILE_DEV_DEBUG: '0',
      },
    },
  )
  if (build.status !== 0) throw new Error(`the arm64 test build failed (exit ${build.status})`)
  const exe = build.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((m) => m.reason === 'compiler-artifact' && m.profile?.test && m.executable)?.executable
  if (!exe) throw new Error('the arm64 test build named no test executable')
  console.log(`built ${exe} (${seconds(started)})`)
  // One test at a time: emulation makes each test several times slower, and
  // the timing-bound ones (settle within 10 s, sweeps) must not also compete.
  // Every skip must name a test that exists (a module move would otherwise turn a skip into a
  // failure here, or a rename silently into nothing).
  const listed = spawnSync(QEMU, ['-L', ARM_ROOT, exe, '--list', '--format', 'terse'], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, QEMU_LD_PREFIX: ARM_ROOT },
  })
  const names = new Set(listed.stdout.split('\n').filter((l) => l.endsWith(': test')).map((l) => l.slice(0, -': test'.length)))
  const unknown = QEMU_SKIPS.filter((t) => !names.has(t))
  if (listed.status !== 0 || unknown.length > 0) {
    throw new Error(`skips that name no arm64 test: ${unknown.join(', ') || '(the listing failed)'}`)
  }
  const args = ['--exact', '--test-threads=1', ...QEMU_SKIPS.flatMap((t) => ['--skip', t])]
  const run = spawnSync(QEMU, ['-L', ARM_ROOT, exe, ...args], {
    cwd: root,
    stdio: 'inherit',
    timeout: 15 * 60 * 1000,
    env: { ...process.env, QEMU_LD_PREFIX: ARM_ROOT },
  })
  const ok = run.status === 0
  console.log(`${ok ? 'ok  ' : 'FAIL'} aarch64-unknown-linux-gnu tests under qemu-user (${seconds(started)})`)
  return ok
}

function muslLink() {
  const started = Date.now()
  const libgcc = join(cross, 'musl-libgcc')
  mkdirSync(libgcc, { recursive: true })
  if (!existsSync(join(libgcc, 'libgcc_s.so.1'))) symlinkSync(LIBGCC_S, join(libgcc, 'libgcc_s.so.1'))
  const run = spawnSync(
    CARGO,
    [
      'rustc', '--locked', '--lib', '-Zbuild-std=std,panic_unwind', '--target', 'x86_64-unknown-linux-musl',
      '--', '-C', `link-arg=-L${libgcc}`,
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...baseEnv,
        CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER: MUSL_GCC,
        RUSTFLAGS: '-C target-feature=-crt-static',
      },
    },
  )
  const library = join(cross, 'x86_64-unknown-linux-musl', 'debug', 'libtaskstream.so')
  let ok = run.status === 0 && existsSync(library)
  if (ok) {
    const dynamic = execFileSync('readelf', ['-d', library], { encoding: 'utf8' })
    // Linked against musl's libc (`libc.so`), not glibc's (`libc.so.6`).
    ok = /NEEDED.*\[libc\.so\]/.test(dynamic) && !/libc\.so\.6/.test(dynamic)
    if (!ok) console.log(dynamic)
  }
  console.log(`${ok ? 'ok  ' : 'FAIL'} x86_64-unknown-linux-musl cdylib linked (${seconds(started)})`)
  return ok
}

ensurePackages()
const results = [arm64Tests(), muslLink()]
const failed = results.filter((ok) => !ok).length
console.log(`${results.length - failed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
