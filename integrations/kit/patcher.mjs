// The patcher every taskstream integration shares (taskstream-qwen, taskstream-gemini): finds an
// installed CLI package, verifies each file it changes by version and sha256, stages the runtime and
// taskstream's loader and binary, swaps the patched files in with renames (rolling back on any error),
// and restores the originals byte for byte. What differs between CLIs is data: `definePatcher(host)`.
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'


const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)

export const MIN_NODE_MAJOR = 20

export class PatchError extends Error {
  constructor(code, message) {
    super(message)
    this.name = 'PatchError'
    this.code = code
  }
}

export function checkNode(version = process.versions.node, tool = 'taskstream') {
  const major = Number(String(version).split('.')[0])
  if (!(major >= MIN_NODE_MAJOR)) {
    throw new PatchError('node-version', `Node.js ${version} is not supported: ${tool} needs Node.js >= ${MIN_NODE_MAJOR}`)
  }
}

export const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

const toNative = (rel) => rel.split('/').join(path.sep)

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

/**
 * The taskstream package to install: its loader (index.js) with the JavaScript layer it requires
 * (lib/), the native binary it loads on this machine and, when there is one beside that
 * binary, the keeper executable of persisted tasks. The published package depends on
 * `taskstream`; inside the taskstream repository the root's index.js is used.
 */
export function resolveTaskstream(tool = 'the integration') {
  let indexPath
  try {
    indexPath = require.resolve('taskstream')
  } catch {
    const repoIndex = path.resolve(here, '..', '..', 'index.js')
    try {
      if (readJson(path.join(path.dirname(repoIndex), 'package.json')).name === 'taskstream') indexPath = repoIndex
    } catch {}
  }
  if (!indexPath) throw new PatchError('no-taskstream', `The taskstream package is not installed next to ${tool}`)
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
  // Persisted tasks run under taskstream's keeper, an executable the addon expects beside itself.
  const keeperPath = ['taskstream-keeper', 'taskstream-keeper.exe'].map((n) => path.join(path.dirname(binaryPath), n)).find((f) => fs.existsSync(f))
  // The loader's JavaScript layer: every file of its `lib/` folder.
  const layerPath = path.join(path.dirname(indexPath), 'lib')
  return { indexPath, layerPath, binaryPath, keeperPath, version }
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
  const tmp = `${file}.taskstream-${process.pid}-${randomBytes(4).toString('hex')}.tmp`
  try {
    writeFileSyncFlushed(tmp, data, mode)
    if (mode !== undefined) fs.chmodSync(tmp, mode)
    fs.renameSync(tmp, file)
  } catch (err) {
    fs.rmSync(tmp, { force: true })
    throw err
  }
}

function removeInstallDir(installDir) {
  const trash = `${installDir}.removed-${process.pid}-${randomBytes(4).toString('hex')}`
  fs.renameSync(installDir, trash)
  fs.rmSync(trash, { recursive: true, force: true })
}

/**
 * Applies a file's edits to its original text. Throws naming the anchor when one is missing or is
 * not unique (so a changed chunk is refused, never guessed at).
 */
export function applyEdits(text, file) {
  let out = text
  for (const edit of file.edits) {
    if (edit.prefix !== undefined) {
      if (!out.startsWith(edit.prefix)) throw new Error(`${file.path}: the expected file start is not there`)
      out = edit.prefix + edit.insert + out.slice(edit.prefix.length)
      continue
    }
    const first = out.indexOf(edit.find)
    if (first < 0) throw new Error(`${file.path}: anchor not found: ${JSON.stringify(edit.find.split('\n')[0])}`)
    if (out.indexOf(edit.find, first + 1) >= 0) {
      throw new Error(`${file.path}: anchor not unique: ${JSON.stringify(edit.find.split('\n')[0])}`)
    }
    let replacement
    if (edit.replace !== undefined) replacement = edit.replace
    else if (edit.append !== undefined) replacement = edit.find + edit.append
    else if (edit.keepAfterFirstLine) replacement = edit.before + edit.find.slice(edit.find.indexOf('\n') + 1)
    else throw new Error(`${file.path}: bad edit`)
    out = out.slice(0, first) + replacement + out.slice(first + edit.find.length)
  }
  return out
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The patch, unpatch and status of one CLI. `host`:
 * - `tool`: the integration's command (`taskstream-qwen`), named in messages, the manifest and
 *   temporary file names;
 * - `toolVersion`: its version, recorded in the manifest;
 * - `packageName`: the CLI's npm package (`@qwen-code/qwen-code`); `bin`: its command (`qwen`);
 * - `installDir`: the folder the patch adds inside the package (the runtime, taskstream, the
 *   originals, manifest.json);
 * - `marker`: a text every patched file holds; `targets`: verified versions → `{ files }` (each
 *   file's path, sha256 and edits, as `applyEdits` takes them); `versionKey`: the manifest field
 *   that records the CLI's version;
 * - `runtimeFiles`: `[absolute source, name in installDir]` pairs copied in.
 */
export function definePatcher(host) {
  const { tool: TOOL, packageName: PACKAGE, bin: BIN, installDir: INSTALL } = host
  // npm's command shims on Windows name the package's file:
  // `"%dp0%\node_modules\@scope\name\entry.js"` (cmd), `"$basedir/node_modules/…"` (ps1, sh),
  // local ones (node_modules/.bin) `"%dp0%\..\@scope\…"`.
  const shimPattern = new RegExp(
    `(?:%~?dp0%?|\\$basedir)[\\\\/]+((?:\\.\\.[\\\\/]+)*(?:node_modules[\\\\/]+)?${PACKAGE.split('/').map(escapeRegExp).join('[\\\\/]+')}[\\\\/]+[^"'\\s]+)`,
    'i',
  )

  function isPackageDir(dir) {
    try {
      return readJson(path.join(dir, 'package.json')).name === PACKAGE
    } catch {
      return false
    }
  }

  /** The nearest folder at or above `file` that is the CLI's package, or undefined. */
  function packageDirAbove(file, p = path) {
    let dir = p.dirname(file)
    for (;;) {
      if (isPackageDir(dir)) return dir
      const parent = p.dirname(dir)
      if (parent === dir) return undefined
      dir = parent
    }
  }

  /**
   * The target an npm command shim on Windows (`<bin>.cmd`, `<bin>.ps1`, or the sh shim `<bin>`)
   * runs (see shimPattern). Returns an absolute path, or undefined when the text holds no such
   * reference.
   */
  function shimTarget(shimPath, shimText, p = path.win32) {
    const m = shimPattern.exec(shimText)
    if (!m) return undefined
    return p.resolve(p.dirname(shimPath), m[1].replace(/[\\/]+/g, p.sep))
  }

  /**
   * The CLI's package directory the `<bin>` on PATH runs: symlinks (npm's POSIX bins,
   * global or local) are resolved; on Windows npm's shims are read. Then, failing that, the nearest
   * node_modules/the CLI's at or above `cwd`.
   */
  function findPackageDir({ env = process.env, platform = process.platform, cwd = process.cwd() } = {}) {
    const win = platform === 'win32'
    const p = win ? path.win32 : path.posix
    const pathVar = env.PATH ?? env.Path ?? env.path ?? ''
    const names = win
      ? [`${BIN}.cmd`, `${BIN}.ps1`, `${BIN}.exe`, BIN, ...(env.PATHEXT ?? '').split(';').filter(Boolean).map((e) => BIN + e.toLowerCase())]
      : [BIN]
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
      const candidate = p.join(dir, 'node_modules', ...PACKAGE.split('/'))
      if (isPackageDir(candidate)) return candidate
      const parent = p.dirname(dir)
      if (parent === dir) break
      dir = parent
    }
    throw new PatchError(
      'not-found',
      `No ${PACKAGE} found: no \`${BIN}\` on PATH runs one, and there is none in node_modules at or above ${cwd}. Pass the package directory: ${TOOL} patch <dir>`,
    )
  }

  /** Resolves `dir` (given or found) to the package directory, following symlinks. */
  function resolvePackageDir(dir, opts) {
    let resolved = dir ? path.resolve(dir) : findPackageDir(opts)
    if (!isPackageDir(resolved)) {
      const nested = path.join(resolved, 'node_modules', ...PACKAGE.split('/'))
      if (dir && isPackageDir(nested)) resolved = nested
      else throw new PatchError('not-package', `${resolved} is not the ${PACKAGE} package directory (no package.json named ${PACKAGE})`)
    }
    return fs.realpathSync(resolved)
  }

  /** What the install looks like: 'original', 'patched', or 'partial' (an interrupted patch). */
  function status(dir) {
    const pkgDir = resolvePackageDir(dir)
    const version = readJson(path.join(pkgDir, 'package.json')).version
    const installDir = path.join(pkgDir, INSTALL)
    const markerFiles = []
    const target = host.targets.get(version)
    for (const file of target ? target.files : []) {
      try {
        if (fs.readFileSync(path.join(pkgDir, toNative(file.path)), 'utf8').includes(host.marker)) markerFiles.push(file.path)
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
      `${PACKAGE} ${version} is not supported by ${TOOL} ${host.toolVersion}: supported versions are ${[...host.targets.keys()].join(', ')}`,
    )
  }

  /**
   * Patches the package at `dir` (default: the one `<bin>` on PATH runs). Verifies the version and every
   * file by sha256 and anchor first; writes everything new into a staging folder; then swaps the
   * patched files in with renames, rolling back on any error. Returns the manifest.
   */
  function patch(dir, { taskstream, log = () => {} } = {}) {
    checkNode(undefined, TOOL)
    const pkgDir = resolvePackageDir(dir)
    const version = readJson(path.join(pkgDir, 'package.json')).version
    const installDir = path.join(pkgDir, INSTALL)
    const st = status(pkgDir)
    if (fs.existsSync(installDir) || st.state !== 'original') {
      throw new PatchError(
        'already-patched',
        st.state === 'patched'
          ? `${pkgDir} is already patched by ${TOOL} (${PACKAGE} ${version}); run \`${TOOL} unpatch\` first`
          : `${pkgDir} holds an interrupted or foreign ${TOOL} patch; run \`${TOOL} unpatch\` to restore it`,
      )
    }
    const target = host.targets.get(version)
    if (!target) throw unsupported(version)

    // Verify everything before writing anything.
    const planned = target.files.map((file) => {
      const abs = path.join(pkgDir, toNative(file.path))
      const original = fs.readFileSync(abs)
      const found = sha256(original)
      if (found !== file.sha256) {
        throw new PatchError(
          'checksum-mismatch',
          `${abs} is not the file released in ${PACKAGE} ${version} (sha256 ${found}, expected ${file.sha256}); it was changed since install, nothing was patched`,
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

    taskstream ??= resolveTaskstream(TOOL)

    // Stage: the runtime, taskstream's loader (with its JavaScript layer) and binary, exact copies of
    // the originals, the patched files.
    const staging = path.join(pkgDir, `.${INSTALL}-staging-${process.pid}-${randomBytes(4).toString('hex')}`)
    const manifest = {
      tool: TOOL,
      toolVersion: host.toolVersion,
      [host.versionKey]: version,
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
      fs.mkdirSync(path.join(staging, 'lib'))
      for (const name of fs.readdirSync(taskstream.layerPath)) {
        fs.copyFileSync(path.join(taskstream.layerPath, name), path.join(staging, 'lib', name))
      }
      fs.copyFileSync(taskstream.binaryPath, path.join(staging, path.basename(taskstream.binaryPath)))
      if (taskstream.keeperPath) {
        const keeper = path.join(staging, path.basename(taskstream.keeperPath))
        fs.copyFileSync(taskstream.keeperPath, keeper)
        fs.chmodSync(keeper, 0o755)
      }
      for (const [from, name] of host.runtimeFiles) fs.copyFileSync(from, path.join(staging, name))
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
          `Patching failed (${err.message}) and so did the rollback (${rollbackErr.message}); run \`${TOOL} unpatch ${pkgDir}\``,
        )
      }
      throw new PatchError('swap', `Patching failed: ${err.message}; the original files are back in place`)
    }
    fs.rmSync(path.join(installDir, 'patched'), { recursive: true, force: true })
    return { dir: pkgDir, manifest }
  }

  /**
   * Restores the original files byte for byte (also after an interrupted patch) and removes the
   * install folder. A file that is neither the original nor the patched version is refused unless
   * `force`.
   */
  function unpatch(dir, { force = false, log = () => {} } = {}) {
    checkNode(undefined, TOOL)
    const pkgDir = resolvePackageDir(dir)
    const installDir = path.join(pkgDir, INSTALL)
    const st = status(pkgDir)
    if (!st.manifest) {
      if (st.state === 'partial') {
        throw new PatchError(
          'no-originals',
          `${pkgDir} has patched files (${st.markerFiles.join(', ')}) but no ${INSTALL}/manifest.json to restore them from; reinstall ${PACKAGE}@${st.version}`,
        )
      }
      throw new PatchError('not-patched', `${pkgDir} is not patched by ${TOOL}; nothing to undo`)
    }
    const manifest = st.manifest
    const plan = manifest.files.map((entry) => {
      const abs = path.join(pkgDir, toNative(entry.path))
      const original = fs.readFileSync(path.join(installDir, 'originals', toNative(entry.path)))
      if (sha256(original) !== entry.originalSha256) {
        throw new PatchError('originals-damaged', `${INSTALL}/originals/${entry.path} was changed; cannot restore it`)
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

  return { status, patch, unpatch, findPackageDir, resolvePackageDir, shimTarget }
}
