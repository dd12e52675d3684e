// Gemini CLI's test helpers: copies of the real @google/gemini-cli 0.61.0 package installed by
// e2e/setup.mjs. The generic ones are ../../kit/processes.mjs.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export * from '../../kit/processes.mjs'

export const here = path.dirname(fileURLToPath(import.meta.url))
export const integrationDir = path.join(here, '..')
export const binPath = path.join(integrationDir, 'bin', 'taskstream-gemini.mjs')
export const installedGemini = path.join(integrationDir, 'e2e', 'node_modules', '@google', 'gemini-cli')

export function requireInstalledGemini() {
  if (!fs.existsSync(path.join(installedGemini, 'package.json'))) {
    throw new Error(`${installedGemini} is missing: run \`node integrations/gemini-cli/e2e/setup.mjs\` (npm run test:gemini does)`)
  }
  return installedGemini
}

/** A fresh copy of the installed package in a temporary folder; returns its package directory. */
export function copyGemini(t) {
  const src = requireInstalledGemini()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'taskstream-gemini-test-'))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const dir = path.join(root, 'node_modules', '@google', 'gemini-cli')
  fs.cpSync(src, dir, { recursive: true, verbatimSymlinks: true })
  return dir
}
