// `npm pack` (and `npm publish`) of an integration package: its prepack and postpack. In the
// repository a package's modules load the shared kit from ../../kit/ (this folder), which is not
// inside the package, so a packed package carries copies of the kit files it runs in its own kit/
// folder; its lib/kit.mjs looks there first, and in the repository, where there is no such folder,
// here.
//
//   node ../kit/pack.mjs copy    prepack, in the package folder: <package>/kit/ made afresh
//   node ../kit/pack.mjs clean   postpack: that folder removed (only a folder this script made)
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))

/** What a package runs of the kit: the patcher, its command line, the runtime code a patch installs. */
export const KIT_FILES = ['patcher.mjs', 'cli.mjs', 'runtime-common.mjs']

/** The file beside kit/ (in the package folder, outside what npm packs) that marks kit/ as this script's copy. */
export const MARK = '.kit-copied-by-pack'

/** Copies KIT_FILES into `<pkgDir>/kit/` (replacing an earlier copy; refusing anything else there). */
export function copyKit(pkgDir) {
  const dir = path.join(pkgDir, 'kit')
  const mark = path.join(pkgDir, MARK)
  if (fs.existsSync(dir)) {
    if (!fs.existsSync(mark)) throw new Error(`${dir} exists and is not a copy made by ${path.join(here, 'pack.mjs')}: not touching it`)
    fs.rmSync(dir, { recursive: true, force: true })
  }
  fs.writeFileSync(mark, `kit/ holds copies of integrations/kit/{${KIT_FILES.join(',')}} for npm pack; postpack removes both.\n`)
  fs.mkdirSync(dir)
  for (const name of KIT_FILES) fs.copyFileSync(path.join(here, name), path.join(dir, name))
  return dir
}

/** Removes `<pkgDir>/kit/` if it is a copy made by copyKit. */
export function cleanKit(pkgDir) {
  const mark = path.join(pkgDir, MARK)
  if (!fs.existsSync(mark)) return
  fs.rmSync(path.join(pkgDir, 'kit'), { recursive: true, force: true })
  fs.rmSync(mark, { force: true })
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command] = process.argv.slice(2)
  const pkgDir = process.cwd()
  if (!fs.existsSync(path.join(pkgDir, 'lib', 'kit.mjs'))) {
    console.error(`kit/pack.mjs: ${pkgDir} is not an integration package (no lib/kit.mjs)`)
    process.exit(2)
  }
  if (command === 'copy') console.log(`kit/pack.mjs: copied ${KIT_FILES.join(', ')} into ${copyKit(pkgDir)}`)
  else if (command === 'clean') cleanKit(pkgDir)
  else {
    console.error('usage: node ../kit/pack.mjs copy|clean (in an integration package folder)')
    process.exit(2)
  }
}
