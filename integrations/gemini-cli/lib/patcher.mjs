// taskstream-gemini: patch / unpatch an installed @google/gemini-cli so that its background jobs run
// on taskstream. See ../README.md. The machinery is the integrations' shared patcher (kit/patcher.mjs,
// found by ./kit.mjs); this file says what is Gemini CLI's.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { kitDir, kitModule } from './kit.mjs'
import { MARKER, TARGETS } from './targets.mjs'

const { PatchError, definePatcher, sha256 } = await kitModule('patcher.mjs')

const here = path.dirname(fileURLToPath(import.meta.url))

export const GEMINI_PACKAGE = '@google/gemini-cli'
/** The folder the patch adds inside the Gemini CLI package. */
export const INSTALL_DIR = 'taskstream-gemini'
export { PatchError, sha256 }

/** Gemini CLI, as the shared patcher and command line take a CLI. */
export const HOST = {
  tool: 'taskstream-gemini',
  toolVersion: JSON.parse(fs.readFileSync(path.join(here, '..', 'package.json'), 'utf8')).version,
  packageName: GEMINI_PACKAGE,
  bin: 'gemini',
  installDir: INSTALL_DIR,
  marker: MARKER,
  targets: TARGETS,
  versionKey: 'geminiVersion',
  runtimeFiles: [
    [path.join(here, '..', 'runtime', 'runtime.mjs'), 'runtime.mjs'],
    [path.join(kitDir, 'runtime-common.mjs'), 'common.mjs'],
  ],
  what: 'run its background\n                                   jobs on taskstream',
  envHelp: `Environment of gemini: TASKSTREAM_GEMINI=0 (all stock, as if unpatched);
task control of background jobs and monitors, off unless set: TASKSTREAM_GEMINI_MEMORY_LIMIT=2G,
TASKSTREAM_GEMINI_CPU_PERCENT=200, TASKSTREAM_GEMINI_MAX_PROCESSES=512, TASKSTREAM_GEMINI_TIMEOUT=30m
(see the README).`,
}

export const patcher = definePatcher(HOST)
export const { status, patch, unpatch, resolvePackageDir, findPackageDir } = patcher
