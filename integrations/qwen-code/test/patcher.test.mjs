// The patcher against copies of the real @qwen-code/qwen-code 0.24.4 package (e2e/setup.mjs installs it).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'

import {
  INSTALL_DIR,
  PatchError,
  checkNode,
  findQwenPackageDir,
  patch,
  resolvePackageDir,
  shimTarget,
  status,
  unpatch,
} from '../lib/patcher.mjs'
import { MARKER, TARGETS } from '../lib/targets.mjs'
import { binPath, copyQwen, diffTrees, run, treeHashes } from '../e2e/support.mjs'

const V = '0.24.4'

function stagingLeftovers(dir) {
  return fs.readdirSync(dir).filter((n) => n.startsWith(`.${INSTALL_DIR}`) || n.startsWith(`${INSTALL_DIR}.removed`))
}

test('patch, then unpatch restores every file byte for byte (and the mode)', (t) => {
  const dir = copyQwen(t)
  const before = treeHashes(dir)
  const { manifest } = patch(dir)
  assert.equal(manifest.qwenVersion, V)
  assert.equal(manifest.state, 'patched')
  assert.equal(status(dir).state, 'patched')
  for (const file of TARGETS.get(V).files) {
    const text = fs.readFileSync(path.join(dir, file.path), 'utf8')
    assert.ok(text.includes(MARKER), `${file.path} is patched`)
    assert.ok(text.includes('import * as __taskstreamQwen from "../taskstream-qwen/runtime.mjs";'))
  }
  const installed = fs.readdirSync(path.join(dir, INSTALL_DIR)).sort()
  assert.ok(installed.includes('index.js') && installed.includes('runtime.mjs') && installed.includes('manifest.json'))
  for (const file of ['surface.js', 'side.js']) {
    assert.ok(fs.existsSync(path.join(dir, INSTALL_DIR, 'lib', file)), `the loader's JavaScript layer (${file}) is copied in`)
  }
  assert.ok(installed.some((n) => n.endsWith('.node')), 'the taskstream binary is copied in')
  assert.ok(!installed.includes('patched'), 'the staging copies are gone')
  assert.deepEqual(stagingLeftovers(dir), [])
  const patchedDiff = diffTrees(before, treeHashes(dir))
  const changed = patchedDiff.filter((d) => !d.startsWith(INSTALL_DIR + path.sep))
  assert.deepEqual(changed.map((d) => d.split(':')[0]).sort(), TARGETS.get(V).files.map((f) => f.path.split('/').join(path.sep)).sort())

  unpatch(dir)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
  assert.equal(status(dir).state, 'original')
  assert.deepEqual(stagingLeftovers(dir), [])

  // And it can be patched again after the undo.
  patch(dir)
  unpatch(dir)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
})

test('the patched modules load: the runtime gives taskstream registries, and falls back with TASKSTREAM_QWEN=0', async (t) => {
  const dir = copyQwen(t)
  patch(dir)
  const script = `
    const rt = await import(${JSON.stringify(path.join(dir, INSTALL_DIR, 'runtime.mjs'))});
    class StockM {}; class StockS {};
    const m = rt.createMonitorRegistry(StockM), s = rt.createBackgroundShellRegistry(StockS);
    console.log(JSON.stringify({ m: m.constructor.name, s: s.constructor.name, stockM: m instanceof StockM, start: typeof m.start }));
  `
  for (const [env, want] of [
    [{}, { m: 'MonitorRegistry', s: 'BackgroundShellRegistry', stockM: false, start: 'function' }],
    [{ TASKSTREAM_QWEN: '0' }, { m: 'StockM', s: 'StockS', stockM: true, start: 'undefined' }],
  ]) {
    const r = await run(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ...env }, timeoutMs: 60_000 })
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), want)
  }
  // The patched CLI itself starts (a full module graph load of the patched chunks happens in the e2e suite).
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tsq-home-'))
  t.after(() => fs.rmSync(home, { recursive: true, force: true }))
  const r = await run(process.execPath, [path.join(dir, 'cli-entry.js'), '--version'], {
    env: { ...process.env, HOME: home },
    timeoutMs: 60_000,
  })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), V)
})

test('an unsupported version is refused, naming the version found and the versions supported; nothing changes', async (t) => {
  const dir = copyQwen(t)
  const pkgPath = path.join(dir, 'package.json')
  fs.writeFileSync(pkgPath, fs.readFileSync(pkgPath, 'utf8').replace(`"version": "${V}"`, '"version": "0.25.0"'))
  const before = treeHashes(dir)
  assert.throws(
    () => patch(dir),
    (err) =>
      err instanceof PatchError &&
      err.code === 'unsupported-version' &&
      /@qwen-code\/qwen-code 0\.25\.0 is not supported/.test(err.message) &&
      /supported versions are 0\.24\.4/.test(err.message),
  )
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
  // The same through the bin: exit code 1 and the message on stderr.
  const r = await run(process.execPath, [binPath, 'patch', dir], { timeoutMs: 60_000 })
  assert.equal(r.code, 1)
  assert.match(r.stderr, /^taskstream-qwen: @qwen-code\/qwen-code 0\.25\.0 is not supported by taskstream-qwen [\d.]+: supported versions are 0\.24\.4\n$/)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
})

test('an already-patched install is refused with a clear error and left as it is', async (t) => {
  const dir = copyQwen(t)
  patch(dir)
  const patched = treeHashes(dir)
  assert.throws(
    () => patch(dir),
    (err) => err instanceof PatchError && err.code === 'already-patched' && /is already patched by taskstream-qwen/.test(err.message),
  )
  const r = await run(process.execPath, [binPath, 'patch', dir], { timeoutMs: 60_000 })
  assert.equal(r.code, 1)
  assert.match(r.stderr, /already patched by taskstream-qwen \(@qwen-code\/qwen-code 0\.24\.4\); run `taskstream-qwen unpatch` first/)
  assert.deepEqual(diffTrees(patched, treeHashes(dir)), [])
  // A patched chunk without the install folder (copied over by hand) is refused too, and unpatch says why.
  fs.rmSync(path.join(dir, INSTALL_DIR), { recursive: true })
  assert.throws(() => patch(dir), (err) => err.code === 'already-patched' && /interrupted or foreign/.test(err.message))
  assert.throws(() => unpatch(dir), (err) => err.code === 'no-originals' && /reinstall @qwen-code\/qwen-code@0\.24\.4/.test(err.message))
})

test('a tampered chunk (checksum mismatch) is refused and nothing is changed', (t) => {
  const dir = copyQwen(t)
  for (const file of TARGETS.get(V).files) {
    const abs = path.join(dir, file.path)
    const original = fs.readFileSync(abs)
    fs.writeFileSync(abs, Buffer.concat([original, Buffer.from('\n// local edit\n')]))
    const before = treeHashes(dir)
    assert.throws(
      () => patch(dir),
      (err) =>
        err instanceof PatchError &&
        err.code === 'checksum-mismatch' &&
        err.message.includes(abs) &&
        err.message.includes(`expected ${file.sha256}`) &&
        /nothing was patched/.test(err.message),
    )
    assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
    assert.deepEqual(stagingLeftovers(dir), [])
    fs.writeFileSync(abs, original)
  }
})

test('a failure during the swap puts the originals back (no half-patched install)', (t) => {
  const dir = copyQwen(t)
  const before = treeHashes(dir)
  // Make the second file's rename fail: replace it with a directory holding a file after the
  // checks passed (rename of a file over a non-empty directory fails on every platform).
  const second = TARGETS.get(V).files[1]
  const abs = path.join(dir, second.path)
  const bytes = fs.readFileSync(abs)
  let swappedFirst = false
  assert.throws(
    () =>
      patch(dir, {
        log: (line) => {
          if (swappedFirst) return
          swappedFirst = true
          assert.match(line, /^patched /)
          fs.rmSync(abs)
          fs.mkdirSync(abs)
          fs.writeFileSync(path.join(abs, 'x'), 'x')
        },
      }),
    (err) => err instanceof PatchError && err.code === 'swap' && /the original files are back in place/.test(err.message),
  )
  fs.rmSync(abs, { recursive: true })
  fs.writeFileSync(abs, bytes)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
  assert.deepEqual(stagingLeftovers(dir), [])
})

test('an interrupted patch (killed between two renames) is recognised and undone by unpatch', (t) => {
  const dir = copyQwen(t)
  const before = treeHashes(dir)
  patch(dir)
  // Simulate a crash after the first rename: the second file still original, the manifest 'patching'.
  const [, second] = TARGETS.get(V).files
  fs.copyFileSync(path.join(dir, INSTALL_DIR, 'originals', second.path), path.join(dir, second.path))
  const mpath = path.join(dir, INSTALL_DIR, 'manifest.json')
  fs.writeFileSync(mpath, fs.readFileSync(mpath, 'utf8').replace('"state": "patched"', '"state": "patching"'))
  assert.equal(status(dir).state, 'partial')
  assert.throws(() => patch(dir), (err) => err.code === 'already-patched' && /interrupted/.test(err.message))
  unpatch(dir)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
})

test('unpatch refuses a file changed since the patch unless --force, and an unpatched install', (t) => {
  const dir = copyQwen(t)
  const before = treeHashes(dir)
  assert.throws(() => unpatch(dir), (err) => err.code === 'not-patched')
  patch(dir)
  const first = path.join(dir, TARGETS.get(V).files[0].path)
  fs.appendFileSync(first, '// edited after the patch\n')
  assert.throws(() => unpatch(dir), (err) => err.code === 'changed-since-patch' && err.message.includes(first))
  unpatch(dir, { force: true })
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
})

test('the default directory is the package the `qwen` on PATH runs: global and local installs, symlinks, Windows shims', (t) => {
  const dir = copyQwen(t) // <root>/node_modules/@qwen-code/qwen-code
  const root = path.resolve(dir, '..', '..', '..')
  // A global install's layout: <prefix>/bin/qwen -> ../lib/node_modules/@qwen-code/qwen-code/cli-entry.js
  const prefix = path.join(root, 'prefix')
  fs.mkdirSync(path.join(prefix, 'bin'), { recursive: true })
  fs.mkdirSync(path.join(prefix, 'lib', 'node_modules', '@qwen-code'), { recursive: true })
  fs.symlinkSync(dir, path.join(prefix, 'lib', 'node_modules', '@qwen-code', 'qwen-code'))
  fs.symlinkSync('../lib/node_modules/@qwen-code/qwen-code/cli-entry.js', path.join(prefix, 'bin', 'qwen'))
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tsq-empty-'))
  t.after(() => fs.rmSync(empty, { recursive: true, force: true }))
  const real = fs.realpathSync(dir)
  assert.equal(findQwenPackageDir({ env: { PATH: `/nonexistent:${path.join(prefix, 'bin')}` }, platform: 'linux', cwd: empty }), real)
  assert.equal(resolvePackageDir(undefined, { env: { PATH: path.join(prefix, 'bin') }, platform: 'linux', cwd: empty }), real)
  // A local install: <project>/node_modules/.bin/qwen (as `npx` puts it on PATH), or found from the cwd.
  fs.mkdirSync(path.join(root, 'node_modules', '.bin'))
  fs.symlinkSync('../@qwen-code/qwen-code/cli-entry.js', path.join(root, 'node_modules', '.bin', 'qwen'))
  assert.equal(findQwenPackageDir({ env: { PATH: path.join(root, 'node_modules', '.bin') }, platform: 'linux', cwd: empty }), real)
  assert.equal(fs.realpathSync(findQwenPackageDir({ env: { PATH: '' }, platform: 'linux', cwd: path.join(root, 'prefix', 'bin') })), real)
  // Passing the project folder instead of the package folder works too.
  assert.equal(resolvePackageDir(root), real)
  // Nothing anywhere: a clear error.
  assert.throws(() => findQwenPackageDir({ env: { PATH: '' }, platform: 'linux', cwd: empty }), (err) => err.code === 'not-found')
  assert.throws(() => resolvePackageDir(empty), (err) => err.code === 'not-package')
  // npm's Windows shims, read with path.win32 whatever this platform is.
  const cmd = '@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST "%dp0%\\node.exe" (\r\n  SET "_prog=%dp0%\\node.exe"\r\n) ELSE (\r\n  SET "_prog=node"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\node_modules\\@qwen-code\\qwen-code\\cli-entry.js" %*\r\n'
  assert.equal(
    shimTarget('C:\\Users\\me\\AppData\\Roaming\\npm\\qwen.cmd', cmd),
    'C:\\Users\\me\\AppData\\Roaming\\npm\\node_modules\\@qwen-code\\qwen-code\\cli-entry.js',
  )
  const ps1 = '#!/usr/bin/env pwsh\n$basedir=Split-Path $MyInvocation.MyCommand.Definition -Parent\n& "node$exe"  "$basedir/node_modules/@qwen-code/qwen-code/cli-entry.js" $args\n'
  assert.equal(shimTarget('D:\\proj\\node_modules\\.bin\\qwen.ps1', ps1), 'D:\\proj\\node_modules\\.bin\\node_modules\\@qwen-code\\qwen-code\\cli-entry.js')
  const localCmd = cmd.replace('%dp0%\\node_modules\\', '%dp0%\\..\\')
  assert.equal(shimTarget('D:\\proj\\node_modules\\.bin\\qwen.cmd', localCmd), 'D:\\proj\\node_modules\\@qwen-code\\qwen-code\\cli-entry.js') // npm's local shims
  assert.equal(shimTarget('D:\\proj\\qwen.cmd', '@ECHO off\r\nnode "%dp0%\\other\\cli.js" %*\r\n'), undefined)
})

test('Node.js older than 20 is refused', () => {
  assert.throws(() => checkNode('18.20.4'), (err) => err.code === 'node-version' && /Node\.js 18\.20\.4 is not supported: taskstream-qwen needs Node\.js >= 20/.test(err.message))
  assert.doesNotThrow(() => checkNode('20.0.0'))
  assert.doesNotThrow(() => checkNode('22.11.0'))
})
