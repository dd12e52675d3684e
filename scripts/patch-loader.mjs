// Post-processes the loader that `napi build --platform` generates (index.js) so that, when no
// native binding loads, the error it throws names the platform package this machine needs
// (`taskstream-linux-x64-gnu`, …) in its message, instead of only the generic
// "Cannot find native binding" text with the package hidden in `error.cause`.
//
// It runs after every build (the `postbuild` and `postbuild:debug` npm scripts) and is:
// - deterministic: the inserted block depends only on package.json (name, version, napi.targets);
// - idempotent: a patched loader is patched to the same bytes (the block sits between markers and
//   is replaced, never duplicated);
// - small: one block inserted in front of the generated load-failure check, nothing else touched.
//   The loader still ends in the generated `module.exports.X = nativeBinding.X` lines (Node's
//   CommonJS export detection needs them for `import { X } from 'taskstream'`), and index.d.ts is
//   never read or written.
// A second block at the very end exports what the JavaScript layer makes (lib/surface.js, given the
// native binding: `executeBackground`, `getDefaultBackgroundShellRegistry`, the string enums) and
// `RECOMMENDED_SIGNAL` (API.md §6.7: the addon's `recommendedSignal()`, frozen once), each with its
// own `module.exports.X =` line for Node's CommonJS export detection (index.d.ts declares them
// through the napi config's `dtsHeaderFile`).
// When napi's template changes so that the anchor is gone, it fails loudly instead of guessing.
//
//   node scripts/patch-loader.mjs [loader ...]   patch in place (default: index.js)
//   node scripts/patch-loader.mjs --check [...]  exit 1 unless already patched
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const BEGIN = '// taskstream:loader-error begin (added by scripts/patch-loader.mjs; do not edit)'
const END = '// taskstream:loader-error end'
const TAIL_BEGIN = '// taskstream:exports begin (added by scripts/patch-loader.mjs; do not edit)'
const TAIL_END = '// taskstream:exports end'
const TAIL = `${TAIL_BEGIN}
const __tsSurface = require('./lib/surface.js')(nativeBinding)
module.exports.executeBackground = __tsSurface.executeBackground
module.exports.getDefaultBackgroundShellRegistry = __tsSurface.getDefaultBackgroundShellRegistry
module.exports.MonitorStatus = __tsSurface.MonitorStatus
module.exports.BackgroundShellStatus = __tsSurface.BackgroundShellStatus
module.exports.WaitReason = __tsSurface.WaitReason
module.exports.RECOMMENDED_SIGNAL = Object.freeze(nativeBinding.recommendedSignal())
${TAIL_END}
`
// The generated load-failure check; the block goes right in front of it.
const ANCHOR = 'if (!nativeBinding) {\n  if (loadErrors.length > 0) {\n'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** `{ packageName, version, targets }` of the package at `dir` (targets as `linux-x64-gnu`, …). */
export function loaderConfig(dir = root) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const { parseTriple } = createRequire(join(dir, 'package.json'))('@napi-rs/cli')
  const napi = pkg.napi ?? {}
  return {
    packageName: napi.packageName ?? pkg.name,
    version: pkg.version,
    targets: (napi.targets ?? []).map((triple) => parseTriple(triple).platformArchABI),
  }
}

function block({ packageName, version, targets }) {
  const json = (value) => JSON.stringify(value)
  return `${BEGIN}
// Name the package this platform needs in the error itself; the generic error below hides it in
// \`cause\`. Same platform detection as requireNative() above.
if (!nativeBinding && loadErrors.length > 0) {
  const __tsPackageName = ${json(packageName)}
  const __tsVersion = ${json(version)}
  const __tsPrebuilt = ${json(targets)}
  const __tsTarget = (() => {
    const { platform, arch } = process
    if (platform === 'linux') {
      const musl = isMusl()
      if (arch === 'arm') return musl ? 'linux-arm-musleabihf' : 'linux-arm-gnueabihf'
      return 'linux-' + arch + (musl ? '-musl' : '-gnu')
    }
    if (platform === 'win32') {
      const vars = (process.config && process.config.variables) || {}
      const gnu = arch === 'x64' && (vars.shlib_suffix === 'dll.a' || vars.node_target_type === 'shared_library')
      return 'win32-' + arch + (gnu ? '-gnu' : '-msvc')
    }
    if (platform === 'android' && arch === 'arm') return 'android-arm-eabi'
    return platform + '-' + arch
  })()
  const __tsPackage = __tsPackageName + '-' + __tsTarget
  const __tsDetail = (dir) => {
    for (const e of loadErrors) {
      const text = e && typeof e.message === 'string' ? e.message : ''
      if (text.indexOf(dir) !== -1 || text.indexOf('version mismatch') !== -1) return ': ' + text.split('\\n')[0]
    }
    return ''
  }
  let __tsMessage
  if (process.env.NAPI_RS_NATIVE_LIBRARY_PATH) {
    __tsMessage =
      'NAPI_RS_NATIVE_LIBRARY_PATH is set (' + process.env.NAPI_RS_NATIVE_LIBRARY_PATH + ') and that file could not be loaded. ' +
      'Unset it to load the platform package \`' + __tsPackage + '\` instead.'
  } else if (__tsPrebuilt.indexOf(__tsTarget) === -1) {
    __tsMessage =
      'There is no package \`' + __tsPackage + '\`: ' + __tsPackageName + ' has no prebuilt binary for ' + __tsTarget + '. ' +
      'Prebuilt packages: ' + __tsPrebuilt.map((t) => __tsPackageName + '-' + t).join(', ') + '.'
  } else {
    let __tsInstalledAt = null
    try {
      __tsInstalledAt = require.resolve(__tsPackage + '/package.json')
    } catch {}
    __tsMessage =
      __tsInstalledAt === null
        ? 'The platform package \`' + __tsPackage + '\` is not installed. npm installs it as an optional dependency of ' +
          __tsPackageName + ' unless optional dependencies are omitted (--omit=optional, --no-optional) or hit the npm bug ' +
          'https://github.com/npm/cli/issues/4828 (remove node_modules and package-lock.json, then npm install again). ' +
          'It can also be installed directly: npm install ' + __tsPackage + '@' + __tsVersion + '.'
        : 'The platform package \`' + __tsPackage + '\` is installed (' + __tsInstalledAt.slice(0, -'/package.json'.length) +
          ') but could not be loaded' + __tsDetail(__tsInstalledAt.slice(0, -'/package.json'.length)) + '; reinstall it (version ' + __tsVersion + ').'
  }
  const error = new Error(
    'Cannot find native binding for ' + __tsPackageName + ' on ' + __tsTarget + '. ' + __tsMessage + ' The load errors are in error.cause.',
  )
  error.code = 'ERR_TASKSTREAM_NATIVE_BINDING'
  error.packageName = __tsPackage
  error.cause = createLoadErrorChain(loadErrors)
  throw error
}
${END}
`
}

/** Returns the patched loader source (the same text when it is already patched). */
export function patchLoaderSource(source, config) {
  const generated = stripPatch(source)
  const at = generated.indexOf(ANCHOR)
  if (at === -1 || generated.indexOf(ANCHOR, at + 1) !== -1) {
    throw new Error("patch-loader: the generated loader's load-failure check was not found exactly once; napi's template changed, update scripts/patch-loader.mjs")
  }
  for (const needed of ['const isMusl = ', 'function createLoadErrorChain(', 'module.exports = nativeBinding\n']) {
    if (!generated.includes(needed)) throw new Error(`patch-loader: the generated loader has no \`${needed.trim()}\`; update scripts/patch-loader.mjs`)
  }
  const body = generated.endsWith('\n') ? generated : generated + '\n'
  return body.slice(0, at) + block(config) + body.slice(at) + TAIL
}

/** The loader without the patch block (the loader as napi generated it). */
export function stripPatch(source) {
  return stripBlock(stripBlock(source, BEGIN, END), TAIL_BEGIN, TAIL_END)
}

function stripBlock(source, beginMarker, endMarker) {
  const begin = source.indexOf(beginMarker)
  if (begin === -1) return source
  const end = source.indexOf(endMarker, begin)
  if (end === -1) throw new Error('patch-loader: unterminated patch block')
  return source.slice(0, begin) + source.slice(end + endMarker.length + 1)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2)
  const check = args.includes('--check')
  const files = args.filter((a) => a !== '--check')
  const config = loaderConfig()
  let stale = 0
  for (const file of files.length > 0 ? files : [join(root, 'index.js')]) {
    const path = resolve(file)
    const source = readFileSync(path, 'utf8')
    const patched = patchLoaderSource(source, config)
    if (patched === source) {
      console.log(`patch-loader: ${path} is patched`)
    } else if (check) {
      console.error(`patch-loader: ${path} is not patched (run npm run build, or node scripts/patch-loader.mjs)`)
      stale++
    } else {
      writeFileSync(path, patched)
      console.log(`patch-loader: patched ${path}`)
    }
  }
  process.exit(stale > 0 ? 1 : 0)
}
