// taskstream-qwen: patch / unpatch an installed @qwen-code/qwen-code so that it runs its monitors and
// background shells on taskstream. See ../README.md.
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { MARKER, SUPPORTED_VERSIONS, TARGETS, applyEdits } from './targets.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)

export const QWEN_PACKAGE = '@qwen-code/qwen-code'
/** The folder the patch adds inside the Qwen Code package. */
export const INSTALL_DIR = 'taskstream-qwen'
export const MIN_NODE_MAJOR = 20

export class PatchError extends Error {
  constructor(code, message) {
    super(message)
    this.name = 'PatchError'
    this.code = code
  }
}

export function checkNode(version = process.versions.node) {
  const major = Number(String(version).split('.')[0])
  if (!(major >= MIN_NODE_MAJOR)) {
    throw new PatchError('node-version', `Node.js ${version} is not supported: taskstream-qwen needs Node.js >= ${MIN_NODE_MAJOR}`)
  }
}

export const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

const toNative = (rel) => rel.split('/').join(path.sep)

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

function isQwenPackageDir(dir) {
  try {
    return readJson(path.join(dir, 'package.json')).name === QWEN_PACKAGE
  } catch {
    return false
  }
}

/** The nearest folder at or above `file` that is the @qwen-code/qwen-code package, or undefined. */
function packageDirAbove(file, p = path) {
  let dir = p.dirname(file)
  for (;;) {
    if (isQwenPackageDir(dir)) return dir
    const parent = p.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/**
 * The target an npm command shim on Windows (`qwen.cmd`, `qwen.ps1`, or the sh shim `qwen`) runs:
 * global shims say `"%dp0%\node_modules\@qwen-code\qwen-code\cli-entry.js"` (cmd) or
 * `"$basedir/node_modules/…"` (ps1, sh), local ones (node_modules/.bin) `"%dp0%\..\@qwen-code\…"`. Returns an absolute path, or undefined when the text holds no such reference.
 */
export function shimTarget(shimPath, shimText, p = path.win32) {
  const m = /(?:%~?dp0%?|\$basedir)[\\/]+((?:\.\.[\\/]+)*(?:node_modules[\\/]+)?@qwen-code[\\/]+qwen-code[\\/]+[^"'\s]+)/i.exec(
    shimText,
  )
  if (!m) return undefined
  return p.resolve(p.dirname(shimPath), m[1].replace(/[\\/]+/g, p.sep))
}

/**
 * The @qwen-code/qwen-code package directory the `qwen` on PATH runs: symlinks (npm's POSIX bins,
 * global or local) are resolved; on Windows npm's shims are read. Then, failing that, the nearest
 * node_modules/@qwen-code/qwen-code at or above `cwd`.
 */
export function findQwenPackageDir({ env = process.env, platform = process.platform, cwd = process.cwd() } = {}) {
  const win = platform === 'win32'
  const p = win ? path.win32 : path.posix
  const pathVar = env.PATH ?? env.Path ?? env.path ?? ''
  const names = win
    ? ['qwen.cmd', 'qwen.ps1', 'qwen.exe', 'qwen', ...(env.PATHEXT ?? '').split(';').filter(Boolean).map((e) => 'qwen' + e.toLowerCase())]
    : ['qwen']
  for (const entry of pathVar.split(win ? ';' : ':')) {
    if (!entry) continue
    for (const name of names) {
      const candidate = p.join(entry, name)
      let stat
      try {
        stat = fs.statSync(candidate)
      } catch {
        continue
      }
      if (!stat.isFile()) continue
      let real
      try {
        real = fs.realpathSync(candidate)
      } catch {
        continue
      }
      const dir = packageDirAbove(real, p)
      if (dir) return dir
      // A shim (Windows, or a wrapper script): read where it points.
      let text = ''
      try {
        text = fs.readFileSync(real, 'utf8').slice(0, 64 * 1024)
      } catch {
        continue
      }
      const target = shimTarget(real, text, p)
      if (target) {
        const viaShim = packageDirAbove(target, p)
        if (viaShim) return viaShim
      }
    }
  }
  let dir = p.resolve(cwd)
  for (;;) {
    const candidate = p.join(dir, 'node_modules', '@qwen-code', 'qwen-code')
    if (isQwenPackageDir(candidate)) return candidate
    const parent = p.dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  throw new PatchError(
    'not-found',
    `No ${QWEN_PACKAGE} found: no \`qwen\` on PATH runs one, and there is none in node_modules at or above ${cwd}. Pass the package directory: taskstream-qwen patch <dir>`,
  )
}

/** Resolves `dir` (given or found) to the package directory, following symlinks. */
export function resolvePackageDir(dir, opts) {
  let resolved = dir ? path.resolve(dir) : findQwenPackageDir(opts)
  if (!isQwenPackageDir(resolved)) {
    const nested = path.join(resolved, 'node_modules', '@qwen-code', 'qwen-code')
    if (dir && isQwenPackageDir(nested)) resolved = nested
    else throw new PatchError('not-qwen', `${resolved} is not the ${QWEN_PACKAGE} package directory (no package.json named ${QWEN_PACKAGE})`)
  }
  return fs.realpathSync(resolved)
}

/**
 * The taskstream package to install: its loader (index.js) and the native binary it loads on this
 * machine. The published package depends on `taskstream`; inside the taskstream repository the
 * root's index.js is used.
 */
export function resolveTaskstream() {
  let indexPath
  try {
    indexPath = require.resolve('taskstream')
  } catch {
    const repoIndex = path.resolve(here, '..', '..', '..', 'index.js')
    try {
      if (readJson(path.join(path.dirname(repoIndex), 'package.json')).name === 'taskstream') indexPath = repoIndex
    } catch {}
  }
  if (!indexPath) throw new PatchError('no-taskstream', 'The taskstream package is not installed next to taskstream-qwen')
  const before = new Set(Object.keys(require.cache))
  let binding
  try {
    binding = require(indexPath)
  } catch (err) {
    throw new PatchError('no-taskstream', `taskstream does not load on this machine: ${err.message}`)
  }
  if (typeof binding.MonitorRegistry !== 'function' || typeof binding.executeBackground !== 'function') {
    throw new PatchError('no-taskstream', `${indexPath} is not a taskstream with MonitorRegistry and executeBackground`)
  }
  const nodeFiles = Object.keys(require.cache).filter((f) => f.endsWith('.node') && /taskstream/.test(path.basename(f)))
  const binaryPath = nodeFiles.find((f) => !before.has(f)) ?? nodeFiles[0]
  if (!binaryPath) throw new PatchError('no-taskstream', 'Could not tell which taskstream binary loaded')
  const version = readJson(path.join(path.dirname(indexPath), 'package.json')).version
  return { indexPath, binaryPath, version }
}

function ownVersion() {
  return readJson(path.join(here, '..', 'package.json')).version
}

function writeFileSyncFlushed(file, data, mode) {
  const fd = fs.openSync(file, 'w', mode)
  try {
    fs.writeFileSync(fd, data)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Writes `data` to `file` through a temporary file in the same folder and a rename. */
function replaceFile(file, data, mode) {
  const tmp = `${file}.taskstream-qwen-${process.pid}-${randomBytes(4).toString('hex')}.tmp`
  try {
    writeFileSyncFlushed(tmp, data, mode)
    if (mode !== undefined) fs.chmodSync(tmp, mode)
    fs.renameSync(tmp, file)
  } catch (err) {
    fs.rmSync(tmp, { force: true })
    throw err
  }
}

/** What the install looks like: 'original', 'patched', or 'partial' (an interrupted patch). */
export function status(dir) {
  const pkgDir = resolvePackageDir(dir)
  const version = readJson(path.join(pkgDir, 'package.json')).version
  const installDir = path.join(pkgDir, INSTALL_DIR)
  const markerFiles = []
  const target = TARGETS.get(version)
  for (const file of target ? target.files : []) {
    try {
      if (fs.readFileSync(path.join(pkgDir, toNative(file.path)), 'utf8').includes(MARKER)) markerFiles.push(file.path)
    } catch {}
  }
  let manifest
  try {
    manifest = readJson(path.join(installDir, 'manifest.json'))
  } catch {}
  const state = manifest ? (manifest.state === 'patched' ? 'patched' : 'partial') : markerFiles.length ? 'partial' : 'original'
  return { dir: pkgDir, version, supported: Boolean(target), state, manifest, markerFiles }
}

function unsupported(version) {
  return new PatchError(
    'unsupported-version',
    `${QWEN_PACKAGE} ${version} is not supported by taskstream-qwen ${ownVersion()}: supported versions are ${SUPPORTED_VERSIONS.join(', ')}`,
  )
}

/**
 * Patches the package at `dir` (default: the one `qwen` on PATH runs). Verifies the version and every
 * file by sha256 and anchor first; writes everything new into a staging folder; then swaps the
 * patched files in with renames, rolling back on any error. Returns the manifest.
 */
export function patch(dir, { taskstream, log = () => {} } = {}) {
  checkNode()
  const pkgDir = resolvePackageDir(dir)
  const version = readJson(path.join(pkgDir, 'package.json')).version
  const installDir = path.join(pkgDir, INSTALL_DIR)
  const st = status(pkgDir)
  if (fs.existsSync(installDir) || st.state !== 'original') {
    throw new PatchError(
      'already-patched',
      st.state === 'patched'
        ? `${pkgDir} is already patched by taskstream-qwen (${QWEN_PACKAGE} ${version}); run \`taskstream-qwen unpatch\` first`
        : `${pkgDir} holds an interrupted or foreign taskstream-qwen patch; run \`taskstream-qwen unpatch\` to restore it`,
    )
  }
  const target = TARGETS.get(version)
  if (!target) throw unsupported(version)

  // Verify everything before writing anything.
  const planned = target.files.map((file) => {
    const abs = path.join(pkgDir, toNative(file.path))
    const original = fs.readFileSync(abs)
    const found = sha256(original)
    if (found !== file.sha256) {
      throw new PatchError(
        'checksum-mismatch',
        `${abs} is not the file released in ${QWEN_PACKAGE} ${version} (sha256 ${found}, expected ${file.sha256}); it was changed since install, nothing was patched`,
      )
    }
    let patchedText
    try {
      patchedText = applyEdits(original.toString('utf8'), file)
    } catch (err) {
      throw new PatchError('anchor', `${err.message}; nothing was patched`)
    }
    const patched = Buffer.from(patchedText, 'utf8')
    return { file, abs, original, patched, mode: fs.statSync(abs).mode & 0o7777 }
  })

  taskstream ??= resolveTaskstream()

  // Stage: the runtime, taskstream's loader and binary, exact copies of the originals, the patched files.
  const staging = path.join(pkgDir, `.${INSTALL_DIR}-staging-${process.pid}-${randomBytes(4).toString('hex')}`)
  const manifest = {
    tool: 'taskstream-qwen',
    toolVersion: ownVersion(),
    qwenVersion: version,
    taskstreamVersion: taskstream.version,
    state: 'patching',
    files: planned.map(({ file, original, patched, mode }) => ({
      path: file.path,
      mode,
      originalSha256: sha256(original),
      patchedSha256: sha256(patched),
    })),
  }
  try {
    fs.mkdirSync(staging)
    fs.writeFileSync(path.join(staging, 'package.json'), JSON.stringify({ private: true, type: 'commonjs' }, null, 2) + '\n')
    fs.copyFileSync(taskstream.indexPath, path.join(staging, 'index.js'))
    fs.copyFileSync(taskstream.binaryPath, path.join(staging, path.basename(taskstream.binaryPath)))
    fs.copyFileSync(path.join(here, '..', 'runtime', 'runtime.mjs'), path.join(staging, 'runtime.mjs'))
    for (const { file, original, patched, mode } of planned) {
      const orig = path.join(staging, 'originals', toNative(file.path))
      fs.mkdirSync(path.dirname(orig), { recursive: true })
      writeFileSyncFlushed(orig, original)
      if (sha256(fs.readFileSync(orig)) !== file.sha256) throw new Error(`copy of ${file.path} does not match`)
      const next = path.join(staging, 'patched', toNative(file.path))
      fs.mkdirSync(path.dirname(next), { recursive: true })
      writeFileSyncFlushed(next, patched, mode)
      fs.chmodSync(next, mode)
    }
    writeFileSyncFlushed(path.join(staging, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n')
    fs.renameSync(staging, installDir)
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true })
    throw new PatchError('stage', `Could not prepare the patch in ${pkgDir}: ${err.message}; nothing was changed`)
  }

  // Swap, one rename per file; on any error put back what was swapped and remove the install folder.
  const swapped = []
  try {
    for (const { file, abs } of planned) {
      fs.renameSync(path.join(installDir, 'patched', toNative(file.path)), abs)
      swapped.push(file)
      log(`patched ${file.path}`)
    }
    manifest.state = 'patched'
    replaceFile(path.join(installDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n')
  } catch (err) {
    try {
      for (const file of swapped) {
        const entry = manifest.files.find((f) => f.path === file.path)
        replaceFile(path.join(pkgDir, toNative(file.path)), fs.readFileSync(path.join(installDir, 'originals', toNative(file.path))), entry.mode)
      }
      removeInstallDir(installDir)
    } catch (rollbackErr) {
      throw new PatchError(
        'rollback',
        `Patching failed (${err.message}) and so did the rollback (${rollbackErr.message}); run \`taskstream-qwen unpatch ${pkgDir}\``,
      )
    }
    throw new PatchError('swap', `Patching failed: ${err.message}; the original files are back in place`)
  }
  fs.rmSync(path.join(installDir, 'patched'), { recursive: true, force: true })
  return { dir: pkgDir, manifest }
}

function removeInstallDir(installDir) {
  const trash = `${installDir}.removed-${process.pid}-${randomBytes(4).toString('hex')}`
  fs.renameSync(installDir, trash)
  fs.rmSync(trash, { recursive: true, force: true })
}

/**
 * Restores the original files byte for byte (also after an interrupted patch) and removes the
 * install folder. A file that is neither the original nor the patched version is refused unless
 * `force`.
 */
export function unpatch(dir, { force = false, log = () => {} } = {}) {
  checkNode()
  const pkgDir = resolvePackageDir(dir)
  const installDir = path.join(pkgDir, INSTALL_DIR)
  const st = status(pkgDir)
  if (!st.manifest) {
    if (st.state === 'partial') {
      throw new PatchError(
        'no-originals',
        `${pkgDir} has patched files (${st.markerFiles.join(', ')}) but no ${INSTALL_DIR}/manifest.json to restore them from; reinstall ${QWEN_PACKAGE}@${st.version}`,
      )
    }
    throw new PatchError('not-patched', `${pkgDir} is not patched by taskstream-qwen; nothing to undo`)
  }
  const manifest = st.manifest
  const plan = manifest.files.map((entry) => {
    const abs = path.join(pkgDir, toNative(entry.path))
    const original = fs.readFileSync(path.join(installDir, 'originals', toNative(entry.path)))
    if (sha256(original) !== entry.originalSha256) {
      throw new PatchError('originals-damaged', `${INSTALL_DIR}/originals/${entry.path} was changed; cannot restore it`)
    }
    let current
    try {
      current = sha256(fs.readFileSync(abs))
    } catch {
      current = undefined
    }
    if (current !== entry.originalSha256 && current !== entry.patchedSha256 && !force) {
      throw new PatchError(
        'changed-since-patch',
        `${abs} changed since it was patched (sha256 ${current}); nothing was restored. Use --force to restore the original anyway`,
      )
    }
    return { entry, abs, original, current }
  })
  for (const { entry, abs, original, current } of plan) {
    if (current === entry.originalSha256) continue
    replaceFile(abs, original, entry.mode)
    if (sha256(fs.readFileSync(abs)) !== entry.originalSha256) throw new PatchError('restore', `${abs} did not restore`)
    log(`restored ${entry.path}`)
  }
  removeInstallDir(installDir)
  return { dir: pkgDir, manifest }
}
