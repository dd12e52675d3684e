// Drives the real Gemini CLI in its interactive UI inside tmux (a real pty; ../../kit/tmux.mjs): the
// prompt typed with `send-keys`, the screen read with `capture-pane -p`. The CLI gets the headless
// runs' settings (gemini.mjs: a HOME of its own with API-key auth, telemetry, usage statistics and
// update checks off, the model endpoint on loopback, one node process, tools approved with --yolo)
// and exactly this environment (`env -i`), nothing inherited from the test process.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { EXIT_MARK, startTmux, tmuxMissing as tmuxMissingFor } from '../../kit/tmux.mjs'
import { MODEL, geminiHome } from './gemini.mjs'
import { requireInstalledGemini } from './support.mjs'

export { EXIT_MARK }

/** Why the interactive suite cannot run here, or false. */
export const tmuxMissing = () => tmuxMissingFor('node integrations/gemini-cli/e2e/setup.mjs installs it on Debian/Ubuntu')

/** A HOME with Gemini's offline settings (gemini.mjs) and a workspace in it; `cleanup()` removes both. */
export function makeSandbox(extraSettings = {}) {
  const home = geminiHome(undefined, extraSettings)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  return { home, work, cleanup: () => fs.rmSync(home, { recursive: true, force: true }) }
}

/**
 * A copy of the installed CLI in `root`/node_modules/@google/gemini-cli, its installed neighbours
 * (node-pty, which the UI runs shell commands on, and keytar) linked beside it so that the copy
 * resolves them as the installed package does (a bare copy would fall back to child_process).
 * Returns the copy's package directory.
 */
export function copyForInteractive(root) {
  const installed = requireInstalledGemini()
  const modules = path.dirname(path.dirname(installed))
  const out = path.join(root, 'node_modules')
  fs.mkdirSync(path.join(out, '@google'), { recursive: true })
  for (const name of fs.readdirSync(modules)) {
    if (name === '@google' || name.startsWith('.')) continue
    fs.symlinkSync(path.join(modules, name), path.join(out, name))
  }
  const dir = path.join(out, '@google', 'gemini-cli')
  fs.cpSync(installed, dir, { recursive: true, verbatimSymlinks: true })
  return dir
}

/** The whole environment of an interactive run against `server`. */
export function interactiveEnv(sandbox, server, extra = {}) {
  return {
    PATH: process.env.PATH,
    HOME: sandbox.home,
    TMPDIR: process.env.TMPDIR ?? os.tmpdir(),
    LANG: 'C.UTF-8',
    TERM: 'screen-256color',
    GEMINI_API_KEY: 'test-key',
    GOOGLE_GEMINI_BASE_URL: server.url,
    GEMINI_CLI_NO_RELAUNCH: 'true',
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
    ...extra,
  }
}

/** The UI shows this in its input box when it waits for a prompt. */
export const INPUT_PROMPT = /Type your message/

/**
 * Whether the UI is idle on screen: its input box shows, no response is running (its spinner line
 * says "esc to cancel") and no prompt is queued.
 */
export const idle = (screen) => INPUT_PROMPT.test(screen) && !/esc to cancel|Initializing\.\.\./.test(screen.split('\n').slice(-15).join('\n'))

/**
 * Starts `gemini -m <model> --yolo` from the package at `pkgDir` in a tmux pane of `cols` × `rows`
 * (the workspace as its folder); resolves to the session (../../kit/tmux.mjs) once the input box
 * shows. `quit()` types /quit.
 */
export async function startInteractiveGemini({ pkgDir, sandbox, server, env = {}, cols = 200, rows = 50, timeoutMs = 150_000 }) {
  const session = await startTmux({
    argv: [process.execPath, path.join(pkgDir, 'bundle', 'gemini.js'), '-m', MODEL, '--yolo'],
    env: interactiveEnv(sandbox, server, env),
    cwd: sandbox.work,
    confDir: sandbox.home,
    ready: INPUT_PROMPT,
    cols,
    rows,
    timeoutMs,
    prefix: 'tsg',
  })
  /** Types /quit once the UI is idle (the normal way out; the CLI runs its exit cleanup). */
  session.quit = async () => {
    await session.waitForScreen(idle, 'the UI to be idle before /quit', { timeoutMs: 30_000 })
    await session.submit('/quit')
  }
  return session
}
