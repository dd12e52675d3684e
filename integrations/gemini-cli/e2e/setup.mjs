// Installs the real @google/gemini-cli the tests drive (../../kit/setup.mjs does the work), exactly
// as e2e/package-lock.json pins it, into e2e/node_modules (about 100 MB; apart from the root install
// so that the root `npm ci` stays small), and makes sure tmux is there for the interactive suite.
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ensureTmux, installPinned } from '../../kit/setup.mjs'

await installPinned(path.dirname(fileURLToPath(import.meta.url)), '@google/gemini-cli')
await ensureTmux()
