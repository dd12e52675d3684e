// Puts the keeper executable (the crate `taskstream-keeper`, src/keeper/) beside the addon, where
// the addon looks for it (docs/persistence.md "The keeper"). `napi build` builds it (it is a
// default member of the workspace) but copies only the `.node` file; this runs after it (the
// `postbuild` and `postbuild:debug` npm scripts, bench/build.mjs).
//
//   node scripts/copy-keeper.mjs <release|debug> [destination folder, default: the repository]
import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

export const KEEPER_FILE = process.platform === 'win32' ? 'taskstream-keeper.exe' : 'taskstream-keeper'

/** The host's target triple, as rustc names it. */
function hostTriple() {
  const verbose = execFileSync('rustc', ['-vV'], { encoding: 'utf8', timeout: 30_000 })
  return /^host: (\S+)$/m.exec(verbose)?.[1] ?? ''
}

/** Copies the keeper of `profile` into `dest`; returns its path. */
export function copyKeeper(profile, dest = root) {
  const targetDir = resolve(root, process.env.CARGO_TARGET_DIR ?? 'target')
  // `napi build` passes `--target <host triple>`, so its output is under target/<triple>/; a
  // plain `cargo build` writes target/<profile>/. The newer of the two is the last build.
  const candidates = [join(targetDir, hostTriple(), profile, KEEPER_FILE), join(targetDir, profile, KEEPER_FILE)]
    .filter((path) => existsSync(path))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
  const built = candidates[0]
  if (!built) {
    throw new Error(`copy-keeper: no ${KEEPER_FILE} under ${targetDir} (${profile}): build the workspace first (npm run build)`)
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
