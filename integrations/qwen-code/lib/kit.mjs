// Where taskstream-qwen finds the integrations' shared kit (the patcher, its command line, the
// runtime code a patch installs): a packed taskstream-qwen carries copies in its own kit/ folder
// (made by `npm pack`'s prepack, ../../kit/pack.mjs); in the repository, where there is no such
// folder, they are the shared files themselves, ../../kit/.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const packed = path.join(here, '..', 'kit')
// While npm pack runs in the repository, kit/ holds the copies, marked as such: the shared files
// stay the ones loaded there (a pack that died before its postpack leaves no stale copy in use).
const inRepository = fs.existsSync(path.join(here, '..', '.kit-copied-by-pack'))

/** The folder of the kit files. */
export const kitDir = fs.existsSync(path.join(packed, 'patcher.mjs')) && !inRepository ? packed : path.join(here, '..', '..', 'kit')

/** A kit module (`patcher.mjs`, `cli.mjs`, `runtime-common.mjs`), loaded. */
export const kitModule = (name) => import(pathToFileURL(path.join(kitDir, name)).href)
