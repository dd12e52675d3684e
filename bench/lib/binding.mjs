// Loads taskstream for the benchmarks: the RELEASE binary built by
// bench/build.mjs into bench/.build/, through the package's own loader
// (index.js honours NAPI_RS_NATIVE_LIBRARY_PATH). BENCH_BINARY=<path> picks
// another binary (e.g. the root debug build, for a quick smoke run).
// BENCH_ROOT=<dir> loads the loader (index.js, and the JavaScript layer beside it) of another
// checkout, to compare a binary of an older tree with the JavaScript that goes with it.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const platformSuffix = { 'linux-x64': 'linux-x64-gnu', 'linux-arm64': 'linux-arm64-gnu', 'darwin-x64': 'darwin-x64', 'darwin-arm64': 'darwin-arm64', 'win32-x64': 'win32-x64-msvc' }[`${process.platform}-${process.arch}`]

export const buildDir = join(root, 'bench', '.build')
export const binaryPath = process.env.BENCH_BINARY ? resolve(process.env.BENCH_BINARY) : join(buildDir, `taskstream.${platformSuffix}.node`)

/** Requires taskstream with the bench binary; throws if it is missing or another one got loaded. */
export function loadTaskstream() {
  if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run \`node bench/build.mjs\` first`)
  process.env.NAPI_RS_NATIVE_LIBRARY_PATH = binaryPath
  const taskstream = createRequire(import.meta.url)(join(process.env.BENCH_ROOT ? resolve(process.env.BENCH_ROOT) : root, 'index.js'))
  if (process.platform === 'linux' && !readFileSync('/proc/self/maps', 'utf8').includes(binaryPath)) {
    throw new Error(`taskstream did not load ${binaryPath}`)
  }
  return taskstream
}

export function binaryFacts() {
  const st = statSync(binaryPath)
  const rel = relative(root, binaryPath)
  return `${rel.startsWith('..') ? binaryPath : rel} (${(st.size / 1e6).toFixed(1)} MB, built ${st.mtime.toISOString()})`
}
