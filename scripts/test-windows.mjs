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
// Wine 8's server occasionally crashes while a job is terminated as one of
// its members is being created ("wineserver crashed"): the whole test
// process dies with it. Such a run is retried (at most twice) and says so;
// a test that fails is never retried.
//
// Arguments are passed to the test binary (a name filter, --exact, …).
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs'
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
      env: {
        ...process.env,
        RUSTC,
        RUSTC_BOOTSTRAP: '1',
        CARGO_TARGET_DIR: cross,
        CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER: MINGW,
        CARGO_PROFILE_DEV_OPT_LEVEL: '2',
        CARGO_PROFILE_DEV_DEBUG: '0',
        LIBNODE_PATH: shims,
      },
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

function stopWine() {
  spawnSync(WINESERVER, ['-k'], { env: wineEnv, stdio: 'ignore' })
}

function runTests(exe, args) {
  copyFileSync(join(shims, 'bcryptprimitives.dll'), join(dirname(exe), 'bcryptprimitives.dll'))
  for (let attempt = 1; attempt <= 3; attempt++) {
    const started = Date.now()
    const run = spawnSync(WINE, [exe, ...args], {
      env: wineEnv,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 15 * 60 * 1000,
      maxBuffer: 64 * 1024 * 1024,
    })
    const output = `${run.stdout ?? ''}${run.stderr ?? ''}`
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

ensurePackages()
shim('libnode')
shim('bcryptprimitives', ['-ladvapi32'])
const exe = buildTests()
process.exit(runTests(exe, process.argv.slice(2)) ? 0 : 1)
