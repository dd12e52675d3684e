// Installs the real @qwen-code/qwen-code the tests drive (../../kit/setup.mjs does the work), exactly
// as e2e/package-lock.json pins it, into e2e/node_modules (about 144 MB; apart from the root install so that the root `npm ci` stays
// small). Skips the install when the pinned version is already there. Then makes sure tmux is there
// for the interactive suite (test/interactive.test.mjs runs the CLI in tmux, a real pty): on Linux,
// as root with apt-get, `apt-get update` and `apt-get install -y tmux` when it is missing; elsewhere
// it says that tmux must be installed (the interactive tests are skipped without it).
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ensureTmux, installPinned } from '../../kit/setup.mjs'

await installPinned(path.dirname(fileURLToPath(import.meta.url)), '@qwen-code/qwen-code')
await ensureTmux()
