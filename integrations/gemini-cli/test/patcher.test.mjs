// The patcher (the shared ../../kit/patcher.mjs with Gemini CLI's targets) against copies of the real
// @google/gemini-cli 0.61.0 package (e2e/setup.mjs installs it).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'

import { INSTALL_DIR, findPackageDir, patch, status, unpatch } from '../lib/patcher.mjs'
import { MARKER, TARGETS } from '../lib/targets.mjs'
import { binPath, copyGemini, diffTrees, run, treeHashes } from '../e2e/support.mjs'

const V = '0.61.0'

test('patch, then unpatch restores every file byte for byte; the CLI starts patched', async (t) => {
  const dir = copyGemini(t)
  const before = treeHashes(dir)
  const { manifest } = patch(dir)
  assert.equal(manifest.geminiVersion, V)
  assert.equal(manifest.tool, 'taskstream-gemini')
  assert.equal(status(dir).state, 'patched')
  for (const file of TARGETS.get(V).files) {
    const text = fs.readFileSync(path.join(dir, file.path), 'utf8')
    assert.ok(text.includes(MARKER), `${file.path} is patched`)
    assert.ok(text.includes('import * as __taskstreamGemini from "../taskstream-gemini/runtime.mjs";'))
  }
  const installed = fs.readdirSync(path.join(dir, INSTALL_DIR)).sort()
  assert.ok(installed.includes('index.js') && installed.includes('runtime.mjs') && installed.includes('manifest.json'))
  for (const file of ['surface.js', 'side.js']) {
    assert.ok(fs.existsSync(path.join(dir, INSTALL_DIR, 'lib', file)), `the loader's JavaScript layer (${file}) is copied in`)
  }
  assert.ok(installed.some((n) => n.endsWith('.node')), 'the taskstream binary is copied in')
  const changed = diffTrees(before, treeHashes(dir)).filter((d) => !d.startsWith(INSTALL_DIR + path.sep))
  assert.deepEqual(
    changed.map((d) => d.split(':')[0]),
    TARGETS.get(V).files.map((f) => f.path.split('/').join(path.sep)),
  )

  // The patched module graph loads: the CLI prints its version.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-home-'))
  t.after(() => fs.rmSync(home, { recursive: true, force: true }))
  const r = await run(process.execPath, [path.join(dir, 'bundle', 'gemini.js'), '--version'], {
    env: { ...process.env, HOME: home, GEMINI_CLI_NO_RELAUNCH: 'true' },
    timeoutMs: 60_000,
  })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), V)

  unpatch(dir)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
  assert.equal(status(dir).state, 'original')
})

test('the command line: status, patch, status, unpatch; a second patch is refused', async (t) => {
  const dir = copyGemini(t)
  const cli = (...args) => run(process.execPath, [binPath, ...args], { timeoutMs: 120_000 })
  let r = await cli('status', dir)
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /@google\/gemini-cli 0\.61\.0 at .*: original\n$/)
  r = await cli('patch', dir)
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /patched bundle\/chunk-JDPZ4CE3\.js\n  patched bundle\/gemini-3HFX2LNT\.js\n  patched bundle\/interactiveCli-TRXNUIPM\.js\nPatched @google\/gemini-cli 0\.61\.0 at .* with taskstream /)
  r = await cli('status', dir)
  assert.match(r.stdout, /: patched\n$/)
  r = await cli('patch', dir)
  assert.equal(r.code, 1)
  assert.match(r.stderr, /already patched by taskstream-gemini/)
  r = await cli('unpatch', dir)
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /Restored the original files of @google\/gemini-cli/)
  r = await cli('frobnicate')
  assert.equal(r.code, 2)
  assert.match(r.stderr, /Unknown command: frobnicate/)
})

test('a version that is not verified is refused, naming the supported ones; a changed chunk is refused', (t) => {
  const dir = copyGemini(t)
  const pkgJson = path.join(dir, 'package.json')
  const original = fs.readFileSync(pkgJson, 'utf8')
  fs.writeFileSync(pkgJson, original.replace('"version": "0.61.0"', '"version": "0.62.0"'))
  const before = treeHashes(dir)
  assert.throws(() => patch(dir), (err) => err.code === 'unsupported-version' && /supported versions are 0\.61\.0/.test(err.message))
  assert.equal(status(dir).supported, false)
  fs.writeFileSync(pkgJson, original)
  const chunk = path.join(dir, TARGETS.get(V).files[0].path)
  fs.appendFileSync(chunk, '\n// changed\n')
  const changed = treeHashes(dir)
  assert.throws(() => patch(dir), (err) => err.code === 'checksum-mismatch')
  assert.deepEqual(diffTrees(changed, treeHashes(dir)), [], 'nothing was written')
  assert.equal(before.size, changed.size)
})

test('the default directory is the package the `gemini` on PATH runs (npm bin symlink)', (t) => {
  const dir = copyGemini(t)
  const root = path.dirname(path.dirname(path.dirname(dir)))
  const bin = path.join(root, 'node_modules', '.bin')
  fs.mkdirSync(bin, { recursive: true })
  fs.symlinkSync(path.join('..', '@google', 'gemini-cli', 'bundle', 'gemini.js'), path.join(bin, 'gemini'))
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-empty-'))
  t.after(() => fs.rmSync(empty, { recursive: true, force: true }))
  assert.equal(findPackageDir({ env: { PATH: bin }, platform: 'linux', cwd: empty }), fs.realpathSync(dir))
  assert.throws(() => findPackageDir({ env: { PATH: '' }, platform: 'linux', cwd: empty }), (err) => err.code === 'not-found' && /`gemini` on PATH/.test(err.message))
})
