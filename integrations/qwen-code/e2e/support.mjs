// Qwen Code's test helpers: copies of the real @qwen-code/qwen-code 0.24.4 package installed by
// e2e/setup.mjs, and its containment task set. The generic ones are ../../kit/processes.mjs.
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { installedPackage, pidsByArgv, pidsWhere } from '../../kit/processes.mjs'

export * from '../../kit/processes.mjs'

export const here = path.dirname(fileURLToPath(import.meta.url))
export const integrationDir = path.join(here, '..')
export const binPath = path.join(integrationDir, 'bin', 'taskstream-qwen.mjs')
const installed = installedPackage(path.join(integrationDir, 'e2e'), '@qwen-code/qwen-code', 'run `node integrations/qwen-code/e2e/setup.mjs` (npm run test:qwen does)')
export const installedQwen = installed.dir
export const requireInstalledQwen = installed.require
/** A fresh copy of the installed package in a temporary folder; returns its package directory. */
export const copyQwen = installed.copy

/**
 * The containment task set: a background shell `trap "" TERM; sleep A & sleep B` (the bash ignores
 * SIGTERM, and so do its sleeps) and a monitor `sleep C`, with numbers unique to this run. `find()`
 * returns the four task processes (bash, its two sleeps, the monitor's sleep) once all of them run.
 */
export function containmentTasks() {
  const tag = String(1000 + Math.floor(Math.random() * 8999))
  const [a, b, c] = ['1', '2', '3'].map((d) => `6${tag}${d}`)
  const shellCommand = `trap "" TERM; sleep ${a} & sleep ${b}`
  const monitorCommand = `sleep ${c}`
  const find = () => {
    const found = [a, b, c].map((n) => pidsByArgv(['sleep', n]))
    // taskstream's bash runs a cgroup step before the command, so match the end of the script.
    const bash = pidsWhere((argv) => argv.length === 3 && /(^|\/)bash$/.test(argv[0]) && argv[1] === '-c' && argv[2].endsWith(shellCommand))
    return found.every((p) => p.length === 1) && bash.length >= 1 ? [...found.flat(), ...bash] : undefined
  }
  return { shellCommand, monitorCommand, find }
}

