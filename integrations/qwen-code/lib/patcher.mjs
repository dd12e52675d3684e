// taskstream-qwen: patch / unpatch an installed @qwen-code/qwen-code so that it runs its monitors and
// background shells on taskstream. See ../README.md. The machinery is the integrations' shared
// patcher (kit/patcher.mjs, found by ./kit.mjs); this file says what is Qwen Code's.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { kitDir, kitModule } from './kit.mjs'
import { MARKER, TARGETS } from './targets.mjs'

const kit = await kitModule('patcher.mjs')
const { PatchError, checkNode: checkNodeFor, definePatcher, resolveTaskstream: resolveFor, sha256 } = kit

const here = path.dirname(fileURLToPath(import.meta.url))

export const QWEN_PACKAGE = '@qwen-code/qwen-code'
/** The folder the patch adds inside the Qwen Code package. */
export const INSTALL_DIR = 'taskstream-qwen'
export const { MIN_NODE_MAJOR } = kit
export { PatchError, sha256 }

/** Qwen Code, as the shared patcher and command line take a CLI. */
export const HOST = {
  tool: 'taskstream-qwen',
  toolVersion: JSON.parse(fs.readFileSync(path.join(here, '..', 'package.json'), 'utf8')).version,
  packageName: QWEN_PACKAGE,
  bin: 'qwen',
  installDir: INSTALL_DIR,
  marker: MARKER,
  targets: TARGETS,
  versionKey: 'qwenVersion',
  runtimeFiles: [
    [path.join(here, '..', 'runtime', 'runtime.mjs'), 'runtime.mjs'],
    [path.join(kitDir, 'runtime-common.mjs'), 'common.mjs'],
  ],
  what: 'run its monitors and\n                                   background shells on taskstream',
  envHelp: `Environment of qwen: TASKSTREAM_QWEN=0 (all stock), TASKSTREAM_QWEN_NATIVE=0 (registries only),
TASKSTREAM_QWEN_SIGNAL=0 (native monitors without the recommended signal setting);
task control, off unless set: TASKSTREAM_QWEN_MEMORY_LIMIT=2G, TASKSTREAM_QWEN_CPU_PERCENT=200,
TASKSTREAM_QWEN_MAX_PROCESSES=512, TASKSTREAM_QWEN_TIMEOUT=30m (see the README).`,
}

export const patcher = definePatcher(HOST)

export const checkNode = (version) => checkNodeFor(version, 'taskstream-qwen')
export const resolveTaskstream = () => resolveFor('taskstream-qwen')
export const { status, patch, unpatch, resolvePackageDir, shimTarget } = patcher
export const findQwenPackageDir = patcher.findPackageDir
