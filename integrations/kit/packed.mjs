// The pack tests of the integration packages: `npm pack` of a package (its prepack copies the kit
// files it runs into it, see pack.mjs), the tarball installed offline into a fresh folder with
// taskstream packed from this repository beside it, and the installed package's bin run there.
// Nothing in that folder refers to the repository: the package sees its kit and taskstream only
// through node_modules.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { run } from './processes.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
export const repoRoot = path.join(here, '..', '..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'

/** The environment of the npm children: none of this run's npm variables (npm_config_local_prefix
 * would point a child npm back at the repository), no NODE_PATH. */
export function cleanEnv(extra = {}) {
  const env = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === 'INIT_CWD' || key === 'NODE_PATH') continue
    env[key] = value
  }
  return { ...env, ...extra }
}

async function step(what, command, args, opts) {
  const r = await run(command, args, { env: cleanEnv(), timeoutMs: 120_000, ...opts })
  if (r.code !== 0) throw new Error(`${what}: ${command} ${args.join(' ')} exited ${r.code ?? r.signal}${r.timedOut ? ' (timed out)' : ''}\n${r.stdout}\n${r.stderr}`)
  return r
}

/**
 * Packs the integration package at `pkgDir` (`npm pack`, its prepack and postpack run) and
 * taskstream (the repository root, `npm pack --ignore-scripts`: its loader and typings), installs
 * both tarballs offline into a fresh folder, and returns { dir, tarball, files, packOutput, exec }:
 * `files` are the paths in the tarball, `exec(args)` runs `npx --offline <bin> ...args` in the folder.
 * With `binary`, taskstream's addon of this repository (and its keeper) is put beside the installed
 * loader, as its platform package would bring it. The folder is removed by `t.after`.
 */
export async function packAndInstall(t, pkgDir, bin, { binary = false } = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'taskstream-packed-'))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const out = path.join(root, 'tarballs')
  const dir = path.join(root, 'consumer')
  fs.mkdirSync(out)
  fs.mkdirSync(dir)
  const packed = await step('pack', npm, ['pack', '--json', '--pack-destination', out], { cwd: pkgDir })
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')))
  const core = await step('pack taskstream', npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', out], { cwd: repoRoot })
  const [coreInfo] = JSON.parse(core.stdout.slice(core.stdout.indexOf('[')))
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }, null, 2))
  await step('install', npm, ['install', '--offline', '--no-audit', '--no-fund', path.join(out, coreInfo.filename), path.join(out, info.filename)], { cwd: dir })
  if (binary) {
    const loader = path.join(dir, 'node_modules', 'taskstream')
    for (const name of fs.readdirSync(repoRoot)) {
      if (/^taskstream\..*\.node$/.test(name) || /^taskstream-keeper(\.exe)?$/.test(name)) fs.copyFileSync(path.join(repoRoot, name), path.join(loader, name))
    }
    for (const name of fs.readdirSync(loader)) if (/^taskstream-keeper/.test(name)) fs.chmodSync(path.join(loader, name), 0o755)
  }
  return {
    dir,
    tarball: path.join(out, info.filename),
    files: info.files.map((f) => f.path).sort(),
    packOutput: packed.stdout + packed.stderr,
    exec: (args, opts = {}) => run(npx, ['--offline', bin, ...args], { cwd: dir, env: cleanEnv(), timeoutMs: 120_000, ...opts }),
  }
}
