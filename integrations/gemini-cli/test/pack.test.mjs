// `npm pack` of taskstream-gemini gives a tarball that runs on its own: the kit files it needs are
// in it (prepack, ../../kit/pack.mjs), and installed offline into a fresh folder (taskstream packed
// beside it) its bin loads, says what it finds, and patches and unpatches a Gemini CLI.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'

import { packAndInstall } from '../../kit/packed.mjs'
import { copyGemini, diffTrees, installedGemini, integrationDir, run, treeHashes } from '../e2e/support.mjs'

const noModuleError = (r) => assert.doesNotMatch(r.stderr, /ERR_MODULE_NOT_FOUND|Cannot find (module|package)/)

test('npm pack: the tarball carries the kit files it runs; installed offline in a fresh folder, `npx taskstream-gemini` loads and works', async (t) => {
  const p = await packAndInstall(t, integrationDir, 'taskstream-gemini', { binary: process.platform === 'linux' })
  assert.deepEqual(
    p.files.filter((f) => f.startsWith('kit/')),
    ['kit/cli.mjs', 'kit/patcher.mjs', 'kit/runtime-common.mjs'],
  )
  assert.ok(!p.files.some((f) => /^(e2e|test)\//.test(f)), 'no tests in the tarball')
  assert.ok(!fs.existsSync(path.join(integrationDir, 'kit')), 'postpack removed the copy from the repository')
  const pkg = JSON.parse(fs.readFileSync(path.join(p.dir, 'node_modules', 'taskstream-gemini', 'package.json'), 'utf8'))
  assert.doesNotMatch(JSON.stringify(pkg.dependencies), /file:/, 'no dependency on a path of the repository')

  // A folder with no Gemini CLI: a clear answer, no crash.
  const empty = fs.mkdtempSync(path.join(p.dir, 'no-gemini-'))
  let r = await p.exec(['status', empty])
  noModuleError(r)
  assert.equal(r.code, 1, r.stderr)
  assert.match(r.stderr, /^taskstream-gemini: .*no-gemini-\w+ is not the @google\/gemini-cli package directory/)
  r = await p.exec(['--help'])
  noModuleError(r)
  assert.match(r.stdout, /taskstream-gemini patch \[dir\]/)

  // With the real CLI (e2e/setup.mjs installs it): patch, the CLI starts, unpatch restores every byte.
  if (process.platform !== 'linux' || !fs.existsSync(path.join(installedGemini, 'package.json'))) return
  const dir = copyGemini(t)
  const before = treeHashes(dir)
  r = await p.exec(['status', dir])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /@google\/gemini-cli 0\.61\.0 at .*: original\n$/)
  r = await p.exec(['patch', dir])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /Patched @google\/gemini-cli 0\.61\.0 at .* with taskstream 0\.1\.0/)
  // The runtime's shared code is the packed kit's file.
  assert.equal(
    fs.readFileSync(path.join(dir, 'taskstream-gemini', 'common.mjs'), 'utf8'),
    fs.readFileSync(path.join(p.dir, 'node_modules', 'taskstream-gemini', 'kit', 'runtime-common.mjs'), 'utf8'),
  )
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-home-'))
  t.after(() => fs.rmSync(home, { recursive: true, force: true }))
  r = await run(process.execPath, [path.join(dir, 'bundle', 'gemini.js'), '--version'], { env: { ...process.env, HOME: home, GEMINI_CLI_NO_RELAUNCH: 'true' }, timeoutMs: 60_000 })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), '0.61.0')
  r = await p.exec(['unpatch', dir])
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(diffTrees(before, treeHashes(dir)), [])
})
