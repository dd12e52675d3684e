// Drives the real Qwen Code CLI in its interactive mode inside tmux (a real pty; ../../kit/tmux.mjs):
// one private tmux server per session (`tmux -L <unique socket>`), the prompt typed with
// `send-keys`, the screen read with `capture-pane -p`. The CLI gets the same settings and
// authentication as the headless runs (qwen.mjs: HOME and the workspace in temporary folders,
// `--auth-type openai` at the scripted model server, telemetry, usage statistics and update checks
// off, YOLO approvals) plus the interactive settings that keep extra model requests and dialogs away
// (follow-up suggestions, managed memory, feedback, welcome back, tips). Every tmux command has a
// timeout; the session has one too, and on it (or on `kill()`, or when this process exits) every
// process of the pane is SIGKILLed and the tmux server is killed.
import fs from 'node:fs'
import path from 'node:path'

import { EXIT_MARK, startTmux, tmuxMissing as tmuxMissingFor } from '../../kit/tmux.mjs'
import { scriptedEnv } from './qwen.mjs'

export { EXIT_MARK }

/** The settings an interactive run adds to the headless ones (setting names from the 0.24.4 bundle's schema). */
export const INTERACTIVE_SETTINGS = {
  ui: {
    hideTips: true,
    enableWelcomeBack: false,
    enableUserFeedback: false,
    // Each finished turn would send the model an extra "[SUGGESTION MODE: …]" request.
    enableFollowupSuggestions: false,
    hideWindowTitle: true,
    showStatusInTitle: false,
  },
  // Managed auto-memory sends the model extra extraction requests after turns.
  memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
  // Off by default; stated so that no "trust this folder?" dialog can appear.
  security: { folderTrust: { enabled: false } },
}

/** Why the interactive suite cannot run here, or false. */
export const tmuxMissing = () => tmuxMissingFor('node integrations/qwen-code/e2e/setup.mjs installs it on Debian/Ubuntu')

/**
 * Starts the CLI in a new private tmux server (../../kit/tmux.mjs), in a pane of `cols` × `rows`
 * with a history of 200 000 lines, running it under `/bin/sh` with exactly the headless runs'
 * environment (`env -i`; qwen.mjs's scriptedEnv), so that the terminal stays open after the CLI exits (as in a user's shell) and the
 * exit code shows on screen. Resolves to the session once the CLI's input prompt is on screen; the
 * session also has `doubleCtrlC()`, the way a user quits Qwen Code.
 */
export async function startInteractive({ qwenDir, sandbox, modelUrl, env = {}, args = [], cols = 200, rows = 50, timeoutMs = 180_000, readyTimeoutMs = 90_000 }) {
  // The headless settings (makeSandbox), plus the interactive ones.
  const settingsFile = path.join(sandbox.home, '.qwen', 'settings.json')
  let settings = {}
  try {
    settings = JSON.parse(fs.readFileSync(settingsFile, 'utf8'))
  } catch {}
  for (const [k, v] of Object.entries(INTERACTIVE_SETTINGS)) settings[k] = { ...settings[k], ...v }
  fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2))

  const session = await startTmux({
    argv: [process.execPath, path.join(qwenDir, 'cli-entry.js'), '--auth-type', 'openai', '--model', 'scripted', '--approval-mode', 'yolo', ...args],
    env: scriptedEnv(sandbox, modelUrl, { TERM: 'screen-256color', ...env }),
    cwd: sandbox.work,
    confDir: sandbox.root,
    ready: /Type your message/,
    cols,
    rows,
    timeoutMs,
    readyTimeoutMs,
    prefix: 'tsq',
  })
  /**
   * Two Ctrl+C, the way a user quits: the first one, then (once the CLI shows "Press Ctrl+C again
   * to exit.", which it takes back after 1 s) the second, which makes the CLI run `/quit`. When
   * the second press came too late (no `/quit`, no exit within 5 s), the pair is sent again, at
   * most `attempts` times. Resolves with the number of pairs sent, once the CLI is quitting.
   */
  session.doubleCtrlC = async ({ attempts = 5, timeoutMs: ms = 20_000 } = {}) => {
    for (let attempt = 1; attempt <= attempts; attempt++) {
      await session.keys('C-c')
      await session.waitForScreen(/Press Ctrl\+C again to exit/, 'the Ctrl+C exit prompt', { timeoutMs: ms, pollMs: 30, join: false })
      await session.keys('C-c')
      if (session.cliPids().length === 0) return attempt
      const accepted = await session
        .waitForScreen((s) => /^\s*> \/quit\s*$/m.test(s) || s.includes(EXIT_MARK), 'the CLI to quit', { timeoutMs: 5_000, pollMs: 100, join: false })
        .then(() => true, () => session.cliPids().length === 0)
      if (accepted) return attempt
    }
    throw new Error(`the CLI did not quit after ${attempts} double Ctrl+C`)
  }
  return session
}
