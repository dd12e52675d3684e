// `npm run test:install`: installs taskstream the way a user gets it, and runs a real consumer.
//
//  1. builds the release binary into a temporary directory (`napi build --platform --release
//     --output-dir <tmp>`), never into the repository root (the root index.js, index.d.ts and
//     .node are left alone), and checks that the committed index.js and index.d.ts match what
//     that build generates;
//  2. packs the main package (`npm pack` of the files `files` selects, with the loader patched by
//     scripts/patch-loader.mjs exactly as `npm run build` does) and the platform package of this
//     machine (a copy of npm/<target>/ plus the binary and the keeper executable beside it);
//  3. creates a fresh consumer project in a temporary directory from examples/qwen-style-cli/
//     (its package.json, a lockfile derived from ours for its dev tools, tsconfig.json, the vitest
//     config, src/ and test/), installs the two tarballs offline
//     (`npm install --offline --no-audit --no-fund <main.tgz> <platform.tgz>`), and runs the
//     consumer's own checks there: `tsc --noEmit --strict` and its vitest suite.
//
// Nothing in the consumer refers to this repository: it sees taskstream only through
// node_modules. On failure the temporary directory is kept and its path printed.
//
//   node scripts/test-install.mjs                  build, pack, install, check
//   node scripts/test-install.mjs --binary <file>  skip the build and pack this .node and the
//                                                  taskstream-keeper beside it (iteration)
//   node scripts/test-install.mjs --keep           keep the temporary directory
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, delimiter, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { MIN, run as runStep } from './lib/run.mjs'
import { copyKeeper, KEEPER_FILE } from './copy-keeper.mjs'
import { loaderConfig, patchLoaderSource } from './patch-loader.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const exampleDir = join(root, 'examples', 'qwen-style-cli')
const args = process.argv.slice(2)
const keep = args.includes('--keep')
const binaryArg = args.includes('--binary') ? resolve(args[args.indexOf('--binary') + 1] ?? '') : null

const t0 = Date.now()
const log = (text) => console.log(`test:install [${((Date.now() - t0) / 1000).toFixed(0).padStart(3)} s] ${text}`)

/** The environment of every child: no npm lifecycle variables of this run (npm_config_local_prefix
 * would point a child npm back at this repository), no NODE_PATH, no binding overrides. */
function cleanEnv() {
  const env = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === 'INIT_CWD' || key === 'NODE_PATH' || key.startsWith('NAPI_RS_')) continue
    env[key] = value
  }
  // npm run puts this repository's node_modules/.bin first on PATH; the consumer uses its own tools.
  const pathKey = Object.keys(env).find((k) => k.toUpperCase() === 'PATH') ?? 'PATH'
  env[pathKey] = (env[pathKey] ?? '')
    .split(delimiter)
    .filter((p) => p && !resolve(p).startsWith(join(root, 'node_modules')))
    .join(delimiter)
  return env
}

/** Runs one step (see scripts/lib/run.mjs: a time limit, its tree killed on a timeout). */
async function run(command, argv, { timeoutMs = 10 * MIN, ...options } = {}) {
  const name = `${command.split('/').pop()} ${argv.join(' ')}`
  return runStep(`test:install: ${name} (in ${options.cwd ?? root})`, command, argv, { env: cleanEnv(), timeoutMs, ...options })
}

async function capture(command, argv, options = {}) {
  return (await run(command, argv, { ...options, capture: true })).stdout
}

/** Pids of running cargo/rustc processes (matched by executable name) that build into this
 * repository's target/ (their working directory is this repository, and CARGO_TARGET_DIR is
 * unset or target/): one build at a time there. Builds elsewhere (target/cross, run beside this
 * by .ci/run; other checkouts) touch nothing this script packs. */
function runningBuilds() {
  if (process.platform !== 'linux') return []
  const busy = []
  const ownTarget = join(realpathSync(root), 'target')
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const comm = readFileSync(`/proc/${name}/comm`, 'utf8').trim()
      if (comm !== 'cargo' && comm !== 'rustc') continue
      const cwd = realpathSync(`/proc/${name}/cwd`)
      if (cwd !== realpathSync(root)) continue
      const targetDir = readFileSync(`/proc/${name}/environ`, 'utf8')
        .split('\0')
        .find((v) => v.startsWith('CARGO_TARGET_DIR='))
        ?.slice('CARGO_TARGET_DIR='.length)
      if (targetDir && resolve(cwd, targetDir) !== ownTarget) continue
      busy.push(`${name} (${comm})`)
    } catch {}
  }
  return busy
}

const fingerprint = (path) => (existsSync(path) ? `${statSync(path).mtimeMs}:${statSync(path).size}` : 'absent')

/** The tarball's file list, from `tar -tzf`, without the leading `package/`. */
const tarList = async (tgz) => (await capture('tar', ['-tzf', tgz], { timeoutMs: 1 * MIN })).split('\n').filter(Boolean).map((p) => p.replace(/^package\//, '')).sort()

/**
 * A lockfile for the consumer's dev tools, cut from this repository's package-lock.json: the
 * entries reachable from the consumer's devDependencies, at the versions we lock, each with its
 * tarball URL on `registry` (our lock omits them: omit-lockfile-registry-resolved). With it, the
 * offline install needs only the tarballs our own `npm ci` put in the npm cache, and no registry
 * metadata at all.
 */
export function consumerLock(consumerPkg, registry = 'https://registry.npmjs.org/') {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const packages = lock.packages
  const keep = new Set()
  const locate = (from, name) => {
    for (let base = from; ; ) {
      const candidate = `${base ? `${base}/` : ''}node_modules/${name}`
      if (packages[candidate]) return candidate
      if (!base) return null
      const at = base.lastIndexOf('/node_modules/')
      base = at === -1 ? '' : base.slice(0, at)
    }
  }
  const visit = (path) => {
    if (keep.has(path)) return
    keep.add(path)
    const pkg = packages[path]
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
      for (const name of Object.keys(pkg[field] ?? {})) {
        const found = locate(path, name)
        if (found) visit(found)
        else if (field === 'dependencies') throw new Error(`consumer lock: ${name} (needed by ${path}) is not in package-lock.json`)
      }
    }
  }
  for (const [name, spec] of Object.entries(consumerPkg.devDependencies ?? {})) {
    const path = `node_modules/${name}`
    if (!packages[path]) throw new Error(`consumer lock: ${name} is not in package-lock.json; the consumer may only use our own dev tools`)
    if (packages[path].version !== spec) throw new Error(`consumer lock: ${name}@${spec} wanted, package-lock.json has ${packages[path].version}`)
    visit(path)
  }
  const out = {
    name: consumerPkg.name,
    version: consumerPkg.version,
    lockfileVersion: 3,
    requires: true,
    packages: { '': { name: consumerPkg.name, version: consumerPkg.version, devDependencies: consumerPkg.devDependencies } },
  }
  const base = registry.endsWith('/') ? registry : `${registry}/`
  for (const path of [...keep].sort()) {
    const entry = { ...packages[path] }
    if (!entry.resolved && !entry.link && entry.version) {
      const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
      entry.resolved = `${base}${name}/-/${name.split('/').pop()}-${entry.version}.tgz`
    }
    out.packages[path] = entry
  }
  return out
}

/** Every file under `dir` (relative paths), skipping node_modules. */
function walk(dir, base = dir) {
  const out = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...walk(path, base))
    else out.push(relative(base, path))
  }
  return out
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'taskstream-install-'))
  let ok = false
  try {
    // ------------------------------------------------------------------ 1. release build
    const buildDir = join(tmp, 'build')
    mkdirSync(buildDir)
    const rootArtifacts = ['index.js', 'index.d.ts', ...readdirSync(root).filter((f) => f.endsWith('.node'))].map((f) => join(root, f))
    const before = rootArtifacts.map(fingerprint)
    if (binaryArg) {
      log(`using ${binaryArg} (--binary: no build, no drift check)`)
      cpSync(binaryArg, join(buildDir, basename(binaryArg)))
      cpSync(join(dirname(binaryArg), KEEPER_FILE), join(buildDir, KEEPER_FILE))
    } else {
      for (let waited = 0; ; waited += 5) {
        const busy = runningBuilds()
        if (busy.length === 0) break
        if (waited >= 15 * 60) throw new Error(`test:install: a build into target/ still runs after 15 min: ${busy.join(', ')}`)
        if (waited % 30 === 0) log(`waiting for a running build to finish: ${busy.join(', ')}`)
        await new Promise((r) => setTimeout(r, 5000))
      }
      log(`napi build --platform --release --output-dir ${buildDir}`)
      await run(join(root, 'node_modules', '.bin', 'napi'), ['build', '--platform', '--release', '--output-dir', buildDir], { cwd: root, timeoutMs: 20 * MIN })
      copyKeeper('release', buildDir)
    }
    const after = rootArtifacts.map(fingerprint)
    rootArtifacts.forEach((path, i) => {
      if (before[i] !== after[i]) log(`warning: ${path} changed during the build (another build running?)`)
    })
    const binaries = readdirSync(buildDir).filter((f) => /^taskstream\..+\.node$/.test(f))
    if (binaries.length !== 1) throw new Error(`expected one taskstream.<target>.node in ${buildDir}, found: ${binaries.join(', ') || 'none'}`)
    const binary = binaries[0]
    const target = binary.slice('taskstream.'.length, -'.node'.length) // e.g. linux-x64-gnu
    log(`binary ${binary} (${(statSync(join(buildDir, binary)).size / 1e6).toFixed(1)} MB)`)

    const config = loaderConfig(root)
    if (!binaryArg) {
      // What we pack is the committed loader and typings; they must be what this build generates.
      const stale = []
      if (readFileSync(join(buildDir, 'index.d.ts'), 'utf8') !== readFileSync(join(root, 'index.d.ts'), 'utf8')) stale.push('index.d.ts')
      const generatedLoader = patchLoaderSource(readFileSync(join(buildDir, 'index.js'), 'utf8'), config)
      if (generatedLoader !== patchLoaderSource(readFileSync(join(root, 'index.js'), 'utf8'), config)) stale.push('index.js')
      if (stale.length > 0) throw new Error(`${stale.join(' and ')} at the repository root differ from what napi build generates now: run npm run build and commit them`)
    }

    // ------------------------------------------------------------------ 2. pack
    const tarballs = join(tmp, 'tarballs')
    mkdirSync(tarballs)

    // The main package: exactly the files `npm pack` selects at the root, with the loader patched
    // as `npm run build` leaves it (a no-op once the committed index.js carries the patch).
    const mainDir = join(tmp, 'pkg-main')
    mkdirSync(mainDir)
    const [{ files }] = JSON.parse(await capture('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root }))
    for (const { path } of files) cpSync(join(root, path), join(mainDir, path))
    const loaderPath = join(mainDir, 'index.js')
    writeFileSync(loaderPath, patchLoaderSource(readFileSync(loaderPath, 'utf8'), config))
    if (readFileSync(join(mainDir, 'index.d.ts'), 'utf8') !== readFileSync(join(root, 'index.d.ts'), 'utf8')) {
      throw new Error('the staged index.d.ts differs from the repository root one')
    }
    const mainFiles = files.map((f) => f.path).sort()
    for (const needed of ['README.md', 'index.d.ts', 'index.js', 'lib/side.js', 'lib/surface.js', 'package.json']) {
      if (!mainFiles.includes(needed)) throw new Error(`the main package does not ship ${needed} (check "files" in package.json)`)
    }
    if (mainFiles.some((f) => f.endsWith('.node'))) throw new Error(`the main package ships a binary: ${mainFiles.join(', ')}`)
    const mainPkg = JSON.parse(readFileSync(join(mainDir, 'package.json'), 'utf8'))
    const platformName = `${config.packageName}-${target}`
    if (mainPkg.optionalDependencies?.[platformName] !== mainPkg.version) {
      throw new Error(`package.json optionalDependencies must pin ${platformName} to ${mainPkg.version}`)
    }
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', tarballs], { cwd: mainDir, stdio: ['ignore', 'ignore', 'inherit'] })

    // The platform package: a copy of npm/<target>/ with the binary in it.
    const platformDir = join(tmp, 'pkg-platform')
    cpSync(join(root, 'npm', target), platformDir, { recursive: true })
    cpSync(join(buildDir, binary), join(platformDir, binary))
    // The keeper of persisted tasks ships beside the binary (docs/persistence.md "The keeper").
    cpSync(join(buildDir, KEEPER_FILE), join(platformDir, KEEPER_FILE))
    const platformPkg = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8'))
    if (platformPkg.name !== platformName || platformPkg.version !== mainPkg.version || platformPkg.main !== binary) {
      throw new Error(`npm/${target}/package.json must be ${platformName}@${mainPkg.version} with main ${binary}`)
    }
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', tarballs], { cwd: platformDir, stdio: ['ignore', 'ignore', 'inherit'] })

    const mainTgz = join(tarballs, `${mainPkg.name}-${mainPkg.version}.tgz`)
    const platformTgz = join(tarballs, `${platformName}-${platformPkg.version}.tgz`)
    const mainList = await tarList(mainTgz)
    const platformList = await tarList(platformTgz)
    if (mainList.join() !== mainFiles.join()) throw new Error(`unexpected main tarball contents: ${mainList.join(', ')}`)
    if (!platformList.includes(binary) || !platformList.includes(KEEPER_FILE) || !platformList.includes('package.json')) {
      throw new Error(`unexpected platform tarball contents: ${platformList.join(', ')}`)
    }
    log(`packed ${basename(mainTgz)} [${mainList.join(', ')}]`)
    log(`packed ${basename(platformTgz)} [${platformList.join(', ')}]`)

    // ------------------------------------------------------------------ 3. consumer
    const consumer = join(tmp, 'consumer')
    mkdirSync(consumer)
    for (const entry of readdirSync(exampleDir)) {
      if (entry === 'node_modules' || entry === 'package-lock.json') continue
      cpSync(join(exampleDir, entry), join(consumer, entry), { recursive: true })
    }
    // The consumer must stand alone: no path into this repository, no relative import out of it.
    for (const file of walk(consumer)) {
      const text = readFileSync(join(consumer, file), 'utf8')
      if (text.includes(root)) throw new Error(`consumer file ${file} mentions ${root}`)
      for (const m of text.matchAll(/\bfrom\s+['"](\.[^'"]*)['"]|\bimport\(\s*['"](\.[^'"]*)['"]/g)) {
        const spec = m[1] ?? m[2]
        const imported = resolve(dirname(join(consumer, file)), spec)
        if (relative(consumer, imported).startsWith('..')) throw new Error(`consumer file ${file} imports ${spec}, outside the consumer`)
      }
    }
    const consumerPkg = JSON.parse(readFileSync(join(consumer, 'package.json'), 'utf8'))
    const registry = (await capture('npm', ['config', 'get', 'registry'], { cwd: consumer })).trim()
    writeFileSync(join(consumer, 'package-lock.json'), `${JSON.stringify(consumerLock(consumerPkg, registry), null, 2)}\n`)

    log(`npm install --offline --no-audit --no-fund ${basename(mainTgz)} ${basename(platformTgz)} (in ${consumer})`)
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', mainTgz, platformTgz], { cwd: consumer })

    log('consumer: npm run typecheck (tsc --noEmit --strict)')
    await run('npm', ['run', 'typecheck'], { cwd: consumer })
    log('consumer: npm test (vitest, against the installed tarballs)')
    await run('npm', ['test'], { cwd: consumer })

    ok = true
    log('passed')
  } finally {
    if (ok && !keep) rmSync(tmp, { recursive: true, force: true })
    else log(`${ok ? 'kept' : 'FAILED; kept'} ${tmp}`)
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main()
