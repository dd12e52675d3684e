// Puts the keeper executable (the crate `taskstream-keeper`, src/keeper/) beside the addon, where
// the addon looks for it (docs/persistence.md "The keeper"). `napi build` builds it (it is a
// default member of the workspace) but copies only the `.node` file; this runs after it (the
// `postbuild` and `postbuild:debug` npm scripts, bench/build.mjs).
//
//   node scripts/copy-keeper.mjs <release|debug> [destination folder, default: the repository]
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

export const KEEPER_FILE = process.platform === 'win32' ? 'taskstream-keeper.exe' : 'taskstream-keeper'

/** Copies the keeper of `profile` into `dest`; returns its path. */
export function copyKeeper(profile, dest = root) {
  const targetDir = resolve(root, process.env.CARGO_TARGET_DIR ?? 'target')
  const built = join(targetDir, profile, KEEPER_FILE)
  if (!existsSync(built)) {
    throw new Error(`copy-keeper: ${built} does not exist: build the workspace first (npm run build)`)
  }
  mkdirSync(dest, { recursive: true })
  const target = join(dest, KEEPER_FILE)
  // By a rename, so a keeper that runs from the old file keeps running.
  const partial = `${target}.partial-${process.pid}`
  copyFileSync(built, partial)
  chmodSync(partial, 0o755)
  renameSync(partial, target)
  return target
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [profile, dest] = process.argv.slice(2)
  if (profile !== 'release' && profile !== 'debug') {
    console.error('usage: node scripts/copy-keeper.mjs <release|debug> [destination folder]')
    process.exit(2)
  }
  console.log(`copy-keeper: ${copyKeeper(profile, dest ? resolve(dest) : root)}`)
}
