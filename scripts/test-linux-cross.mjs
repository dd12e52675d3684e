// The two other Linux targets, on this x86_64 machine: `npm run test:linux-cross`
// (called by .ci/run).
//
// * aarch64-unknown-linux-gnu: the Rust tests, built with Debian's
//   gcc-aarch64-linux-gnu as linker and run by qemu-user
//   (`qemu-aarch64 -L /usr/aarch64-linux-gnu`, libc6-dev-arm64-cross). 10
//   tests are skipped, each for a limit of user-mode emulation, not of the
//   code: without binfmt_misc (not mounted here) a test binary cannot exec
//   itself again, so the host-death and persistence tests run their hosts,
//   keepers, launchers and racing hosts through qemu-aarch64 (four that
//   prove a live keeper still fail for qemu's emulated /proc/<pid>/stat);
//   qemu-user runs a
//   `posix_spawn` child as a forked copy of itself, so an exec failure
//   reaches the child instead of the caller and the caller may look at the
//   child before its `setsid` (the spawn tests); and
//   qemu's own /proc/self/stat says parent 0 (the process-table test). The
//   native arm64 job of the CI workflow runs them.
// * x86_64-unknown-linux-musl: the cdylib and the keeper executable are linked with Debian's musl-gcc
//   and `-C target-feature=-crt-static` (without it cargo drops a musl
//   cdylib). musl-gcc does not search the directory of libgcc_s (the
//   unwinder every Rust cdylib needs), so a link-only directory holding a
//   symlink to it is added to the final link.
//
// Both use Debian's rustc-web toolchain and build into target/cross, kept
// between runs, with warnings denied (so .ci/run does not also type-check
// these two targets in test:targets). arm64 links Debian's own arm64 build
// of the standard library, unpacked from its package (scripts/lib/debian.mjs,
// arm64StandardLibrary), and builds it from source with -Zbuild-std only where
// that package cannot be fetched; musl, which Debian has no standard library
// for, always builds it from source. Missing packages are installed with
// apt-get.
import { existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { arm64StandardLibrary, LINUX_CROSS, TOOLCHAIN } from './lib/debian.mjs'
import { ensureDebianPackages, main, MIN, output, run } from './lib/run.mjs'

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
  // The host-death tests and the persistence tests run this test binary again (as a host that
  // dies, the keeper, a launcher, a racing host) through qemu-aarch64
  // (TASKSTREAM_TEST_REEXEC_WRAPPER below), and all but these pass under it. A keeper records its own start time, which it reads through qemu's emulated
  // /proc/<its pid>/stat; the host reads the real one, and the two differ, so the host proves the
  // keeper a stranger (as it must for a mismatch): the four tests that prove a live keeper fail
  // for that alone.
  'persist::tests::keeper::a_keeper_stopped_by_sigterm_ends_its_tree_and_records_it',
  'persist::tests::keeper::a_killed_keeper_takes_its_task_with_it_and_scan_reports_it_lost',
  'persist::tests::keeper::the_keeper_inherits_neither_the_hosts_lock_nor_its_descriptors',
  'persist::tests::keeper::the_keeper_outlives_the_host_that_launched_it',
  // qemu-user runs posix_spawn's child as a plain fork: an exec failure is not reported to the
  // caller (the keeper's spawn into a missing cwd succeeds), and the caller may look at the
  // child before its setsid.
  'persist::tests::keeper::a_keeper_that_cannot_start_its_task_answers_err',
  'process::unix::tests::spawn::spawn_pipes_output_and_reports_the_exit_code',
  'process::unix::tests::pty::terminal_spawn_failures_track_nothing_and_leak_nothing',
  'process::unix::tests::spawn::spawn_failures_are_os_errors_and_track_nothing',
  'process::unix::tests::spawn::spawning_and_reaping_leaks_no_descriptors',
  // qemu-user's emulated /proc/self/stat reports parent 0.
  'process::unix::tests::tree::the_process_table_sees_this_process',
]

function ensurePackages() {
  return ensureDebianPackages('test:linux-cross', [...TOOLCHAIN, ...LINUX_CROSS])
}

const baseEnv = { ...process.env, RUSTC, RUSTC_BOOTSTRAP: '1', CARGO_TARGET_DIR: cross }
const seconds = (started) => `${((Date.now() - started) / 1000).toFixed(0)} s`

/** Builds the arm64 tests; returns the test executable and when the build started. */
async function arm64Build() {
  const started = Date.now()
  // Debian's own arm64 build of the standard library where it can be had, else one from source.
  const sysroot = await arm64StandardLibrary(join(cross, 'arm64-std'))
  const std = sysroot === null ? ['-Zbuild-std=std,panic_unwind'] : []
  const built = await output(
    'the arm64 test build (cargo test --no-run, aarch64-unknown-linux-gnu)',
    CARGO,
    [
      // The pure core's tests (the crate taskstream-core): nothing in src/binding/ differs by
      // architecture, and the host runs its tests. The binding and the keeper have no Rust tests;
      // they are named so that cargo unifies the dependencies' features as for the Windows and
      // musl builds of target/cross: named alone, the core got a leaner `syn`, and the host's
      // proc-macro2, quote, syn and serde_derive were compiled once more for it.
      'test', '--locked', '--no-run', '-p', 'taskstream-core', '-p', 'taskstream', '-p', 'taskstream-keeper', ...std,
      '--target', 'aarch64-unknown-linux-gnu', '--message-format=json-render-diagnostics',
    ],
    {
      cwd: root,
      timeoutMs: 40 * MIN,
      env: {
        ...baseEnv,
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER: ARM_GCC,
        // Warnings denied, as test:targets does for the targets it only type-checks (.ci/run
        // leaves this one to this build).
        // (With --target, RUSTFLAGS reach only the units built for the target, not build scripts
        // or proc macros.)
        RUSTFLAGS: sysroot === null ? '-D warnings' : `-D warnings --sysroot ${sysroot}`,
        // Optimised: every instruction is emulated.
        CARGO_PROFILE_DEV_OPT_LEVEL: '2',
        CARGO_PROFILE_DEV_DEBUG: '0',
      },
    },
  )
  const exe = built
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((m) => m.reason === 'compiler-artifact' && m.profile?.test && m.executable)?.executable
  if (!exe) throw new Error('the arm64 test build named no test executable')
  console.log(`built ${exe} (${seconds(started)})`)
  return { exe, started }
}

/** The arm64 tests that only compute (no process, file or timer: the guards and the monitor's line
 * pipeline, about 145 of the 250 CPU-seconds the tests take under qemu, measured with
 * `--report-time`). Under qemu every test is bound by the CPU of its emulation. */
const COMPUTE_SHARD = /^(guards|monitor::pipeline)::/

/** Runs the arm64 tests `arm64Build()` built, under qemu-user; true if they passed. */
async function arm64Run({ exe, started }) {
  // Every skip must name a test that exists (a module move would otherwise turn a skip into a
  // failure here, or a rename silently into nothing).
  const listed = await run('listing the arm64 tests under qemu-user', QEMU, ['-L', ARM_ROOT, exe, '--list', '--format', 'terse'], {
    cwd: root,
    capture: true,
    check: false,
    timeoutMs: 2 * MIN,
    env: { ...process.env, QEMU_LD_PREFIX: ARM_ROOT },
  })
  const names = new Set(listed.stdout.split('\n').filter((l) => l.endsWith(': test')).map((l) => l.slice(0, -': test'.length)))
  const unknown = QEMU_SKIPS.filter((t) => !names.has(t))
  if (listed.status !== 0 || unknown.length > 0) {
    throw new Error(`skips that name no arm64 test: ${unknown.join(', ') || '(the listing failed)'}`)
  }
  // Two test processes at once, each running one test at a time: the compute-only tests in one,
  // every other test in the other (one at a time: emulation makes each test several times slower,
  // and the timing-bound ones, settle within 10 s, sweeps, must not also compete with each
  // other). Run one after the other, the two took 250 s of one core while the rest of .ci/run
  // (the real CLIs' runs, waiting on their model server) left the other core mostly idle.
  const compute = [...names].filter((t) => COMPUTE_SHARD.test(t))
  const shards = [
    { what: 'compute-only', args: ['--exact', '--test-threads=1', ...compute] },
    { what: 'the rest', args: ['--exact', '--test-threads=1', ...[...QEMU_SKIPS, ...compute].flatMap((t) => ['--skip', t])] },
  ]
  const results = await Promise.all(
    shards.map(({ what, args }) =>
      run(`the arm64 tests under qemu-user (${what})`, QEMU, ['-L', ARM_ROOT, exe, ...args], {
        cwd: root,
        capture: true,
        check: false,
        timeoutMs: 25 * MIN,
        // The persistence tests run the test binary again (the keeper, a launcher, a racing
        // host): without binfmt_misc an arm64 binary cannot be exec'd directly, so they exec
        // qemu on it.
        env: { ...process.env, QEMU_LD_PREFIX: ARM_ROOT, TASKSTREAM_TEST_REEXEC_WRAPPER: QEMU },
      }),
    ),
  )
  // Each shard's output as a whole, once both ended; together they ran every listed test but
  // the skips.
  let ran = 0
  for (const [i, result] of results.entries()) {
    console.log(`== the arm64 tests under qemu-user (${shards[i].what}): exit ${result.status}`)
    process.stdout.write(result.stdout ?? '')
    ran += Number(/test result: \w+\. (\d+) passed/.exec(result.stdout ?? '')?.[1] ?? 0)
  }
  const expected = names.size - QEMU_SKIPS.length
  const ok = results.every((r) => r.status === 0) && ran === expected
  if (ran !== expected) console.log(`FAIL the two shards passed ${ran} tests, not the ${expected} listed ones`)
  console.log(`${ok ? 'ok  ' : 'FAIL'} aarch64-unknown-linux-gnu tests under qemu-user (${seconds(started)})`)
  return ok
}

async function muslLink() {
  const started = Date.now()
  const libgcc = join(cross, 'musl-libgcc')
  mkdirSync(libgcc, { recursive: true })
  if (!existsSync(join(libgcc, 'libgcc_s.so.1'))) symlinkSync(LIBGCC_S, join(libgcc, 'libgcc_s.so.1'))
  const muslEnv = {
    ...baseEnv,
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER: MUSL_GCC,
    // The link-only directory reaches every unit built for the target; only the two links use it.
    RUSTFLAGS: `-D warnings -C target-feature=-crt-static -C link-arg=-L${libgcc}`,
    // Only the link is checked here: no debug info to make and write.
    CARGO_PROFILE_DEV_DEBUG: '0',
  }
  // The cdylib and the keeper executable the musl package ships beside it, in one build: the core
  // and its dependencies are compiled once, with the features both packages unify to (built one
  // after the other, the keeper alone compiled regex, serde and the core again).
  const build = await run(
    'the musl cdylib and keeper build (cargo build -p taskstream -p taskstream-keeper, x86_64-unknown-linux-musl)',
    CARGO,
    [
      'build', '--locked', '-p', 'taskstream', '-p', 'taskstream-keeper', '-Zbuild-std=std,panic_unwind',
      '--target', 'x86_64-unknown-linux-musl',
    ],
    { cwd: root, check: false, timeoutMs: 30 * MIN, env: muslEnv },
  )
  const library = join(cross, 'x86_64-unknown-linux-musl', 'debug', 'libtaskstream.so')
  const exe = join(cross, 'x86_64-unknown-linux-musl', 'debug', 'taskstream-keeper')
  let ok = build.status === 0 && existsSync(library) && existsSync(exe)
  if (ok) {
    const dynamic = await output('readelf -d on the musl cdylib', 'readelf', ['-d', library], { timeoutMs: 1 * MIN })
    // Linked against musl's libc (`libc.so`), not glibc's (`libc.so.6`).
    ok = /NEEDED.*\[libc\.so\]/.test(dynamic) && !/libc\.so\.6/.test(dynamic)
    if (!ok) console.log(dynamic)
  }
  if (ok) {
    // A musl executable: musl's loader, musl's libc. (It is not run here: like every
    // dynamically linked Rust program for musl it loads libgcc_s, the unwinder, and this
    // machine has only glibc's, which musl cannot load.)
    const headers = await output('readelf -l -d on the musl keeper', 'readelf', ['-l', '-d', exe], { timeoutMs: 1 * MIN })
    ok = headers.includes('/lib/ld-musl-x86_64.so.1') && /NEEDED.*\[libc\.so\]/.test(headers) && !/libc\.so\.6/.test(headers)
    if (!ok) console.log(headers)
  }
  console.log(`${ok ? 'ok  ' : 'FAIL'} x86_64-unknown-linux-musl cdylib and keeper linked (${seconds(started)})`)
  return ok
}

// `--only=arm64` or `--only=musl` runs one of the two (.ci/run puts them in one chain, one after the
// other: the musl build beside the arm64 tests made them too slow under qemu, see docs/development.md).
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length)
if (only !== undefined && only !== 'arm64' && only !== 'musl') {
  console.error(`test:linux-cross: --only must be arm64 or musl, not ${JSON.stringify(only)}`)
  process.exit(2)
}

await main(async () => {
  await ensurePackages()
  const results = []
  if (only !== 'musl') results.push(await arm64Run(await arm64Build()))
  if (only !== 'arm64') results.push(await muslLink())
  const failed = results.filter((ok) => !ok).length
  console.log(`${results.length - failed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
})
