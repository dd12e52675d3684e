// Gemini CLI's test helpers: copies of the real @google/gemini-cli 0.61.0 package installed by
// e2e/setup.mjs. The generic ones are ../../kit/processes.mjs.
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { installedPackage } from '../../kit/processes.mjs'

export * from '../../kit/processes.mjs'

export const here = path.dirname(fileURLToPath(import.meta.url))
export const integrationDir = path.join(here, '..')
export const binPath = path.join(integrationDir, 'bin', 'taskstream-gemini.mjs')
const installed = installedPackage(path.join(integrationDir, 'e2e'), '@google/gemini-cli', 'run `node integrations/gemini-cli/e2e/setup.mjs` (npm run test:gemini does)')
export const installedGemini = installed.dir
export const requireInstalledGemini = installed.require
/** A fresh copy of the installed package in a temporary folder; returns its package directory. */
export const copyGemini = installed.copy
