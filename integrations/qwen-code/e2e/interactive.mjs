// Drives the real Qwen Code CLI in its interactive mode inside tmux (a real pty): one private tmux
// server per session (`tmux -L <unique socket>`), the prompt typed with `send-keys`, the screen read
// with `capture-pane -p`. The CLI gets the same settings and authentication as the headless runs
// (qwen.mjs: HOME and the workspace in temporary folders, `--auth-type openai` at the scripted model
// server, telemetry, usage statistics and update checks off, YOLO approvals) plus the interactive
// settings that keep extra model requests and dialogs away (follow-up suggestions, managed memory,
// feedback, welcome back, tips). Every tmux command has a timeout; the session has one too, and on
// it (or on `kill()`, or when this process exits) every process of the pane is SIGKILLed and the
// tmux server is killed.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { scriptedEnv } from './qwen.mjs'
import { descendants, isAlive, killPids, nodeDescendants, run, until } from './support.mjs'

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

/** Why tmux cannot be used here, or false. */
export function tmuxMissing() {
  if (process.platform === 'win32') return 'tmux does not run on Windows'
  const r = spawnSync('tmux', ['-V'], { encoding: 'utf8', timeout: 10_000 })
  if (r.error || r.status !== 0) return 'tmux is not installed (node integrations/qwen-code/e2e/setup.mjs installs it on Debian/Ubuntu)'
  return false
}

const shq = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`

// Sessions still alive, killed synchronously if this process exits (or is told to) before them.
const live = new Set()
let guarded = false
function guardExit() {
  if (guarded) return
  guarded = true
  process.on('exit', () => {
    for (const s of live) s.killSync()
  })
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, () => {
      for (const s of live) s.killSync()
      process.exit(128 + (os.constants.signals[sig] ?? 1))
    })
  }
}

const EXIT_MARK = '[tsq-cli-exited code='

/**
 * Starts the CLI in a new private tmux server, in a pane of `cols` × `rows` with a history of
 * 200 000 lines. The pane runs `/bin/sh -c '<cli>; echo [tsq-cli-exited code=N]; sleep'` with
 * exactly the environment below (`env -i`), so that the terminal stays open after the CLI exits
 * (as in a user's shell) and the exit code shows on screen. Resolves to the session, once the
 * CLI's input prompt is on screen.
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

  const socket = `tsq-${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  const conf = path.join(sandbox.root, 'tmux.conf')
  fs.writeFileSync(
    conf,
    ['set -g history-limit 200000', 'set -g status off', 'set -g default-shell /bin/sh', 'set -g default-terminal screen-256color', 'set -g escape-time 0', ''].join('\n'),
  )
  const childEnv = scriptedEnv(sandbox, modelUrl, { TERM: 'screen-256color', ...env })
  const cli = [process.execPath, path.join(qwenDir, 'cli-entry.js'), '--auth-type', 'openai', '--model', 'scripted', '--approval-mode', 'yolo', ...args]
  const holdSeconds = Math.ceil(timeoutMs / 1000) + 60
  const script = `"$@"; echo "${EXIT_MARK}$?]"; exec sleep ${holdSeconds}`
  const paneCommand = ['exec', 'env', '-i', ...Object.entries(childEnv).map(([k, v]) => `${k}=${v}`), '/bin/sh', '-c', script, 'sh', ...cli].map((a, i) => (i === 0 ? a : shq(a))).join(' ')

  const tmuxArgs = (a) => ['-L', socket, '-f', conf, ...a]
  const tmux = async (a, ms = 15_000) => {
    const r = await run('tmux', tmuxArgs(a), { timeoutMs: ms })
    if (r.code !== 0) throw new Error(`tmux ${a[0]}: ${r.code ?? r.signal}${r.timedOut ? ' (timed out)' : ''} ${r.stderr.trim()}`)
    return r.stdout
  }

  const session = {
    socket,
    socketPath: undefined,
    panePid: undefined,
    serverPid: undefined,
    killed: false,
    timedOut: false,
    /** Every process of the pane, then the tmux server, at once (synchronous). */
    killSync() {
      if (session.killed) return
      session.killed = true
      live.delete(session)
      clearTimeout(timer)
      if (session.panePid) killPids(descendants(session.panePid).reverse())
      spawnSync('tmux', tmuxArgs(['kill-server']), { stdio: 'ignore', timeout: 10_000 })
      if (session.serverPid && isAlive(session.serverPid)) killPids([session.serverPid])
      // A server that ends with its last pane leaves its socket file behind.
      if (session.socketPath) fs.rmSync(session.socketPath, { force: true })
    },
    async kill() {
      session.killSync()
    },
    /** The screen (`history`: with the whole scrollback), one string; `join`: wrapped lines joined. */
    async capture({ history = false, join = false } = {}) {
      return tmux(['capture-pane', '-p', '-t', 'main', ...(join ? ['-J'] : []), ...(history ? ['-S', '-', '-E', '-'] : [])])
    },
    /** Types `text` literally (no Enter). */
    async type(text) {
      await tmux(['send-keys', '-t', 'main', '-l', text])
    },
    /** Sends tmux key names (`Enter`, `C-c`, `Escape`, …). */
    async keys(...names) {
      await tmux(['send-keys', '-t', 'main', ...names])
    },
    /**
     * Resolves with the screen once `test` (a RegExp or a function of the screen text) holds,
     * polling every `pollMs`; rejects after timeoutMs, with the last screen in the message.
     */
    async waitForScreen(test, what, { timeoutMs: ms = 60_000, history = false, join = true, pollMs = 150 } = {}) {
      const ok = typeof test === 'function' ? test : (s) => test.test(s)
      const started = Date.now()
      let last = ''
      for (;;) {
        if (session.killed) throw new Error(`waiting for ${what}: the tmux session was killed${session.timedOut ? ' (session timeout)' : ''}\n${last}`)
        try {
          last = await session.capture({ history, join })
          if (ok(last)) return last
        } catch (err) {
          if (Date.now() - started > ms) throw err
        }
        if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}; the screen:\n${last}`)
        await new Promise((r) => setTimeout(r, pollMs))
      }
    },
    /** Types a line into the prompt: the text, a check that it shows, then Enter. */
    async submit(text, { timeoutMs: ms = 30_000 } = {}) {
      await session.type(text)
      await session.waitForScreen((s) => s.includes(text), `"${text}" in the input box`, { timeoutMs: ms })
      await session.keys('Enter')
    },
    /**
     * Two Ctrl+C, the way a user quits: the first one, then (once the CLI shows "Press Ctrl+C again
     * to exit.", which it takes back after 1 s) the second, which makes the CLI run `/quit`. When
     * the second press came too late (no `/quit`, no exit within 5 s), the pair is sent again, at
     * most `attempts` times. Resolves with the number of pairs sent, once the CLI is quitting.
     */
    async doubleCtrlC({ attempts = 5, timeoutMs: ms = 20_000 } = {}) {
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
    },
    /** The CLI's node processes: the pane's node descendants (the launcher and the CLIs it relaunches). */
    cliPids() {
      return session.panePid ? nodeDescendants(session.panePid).slice(1) : []
    },
    /** The CLI's exit code once it printed on screen and none of its node processes is left (null for a signal). */
    async waitExit({ timeoutMs: ms = 60_000 } = {}) {
      const screen = await session.waitForScreen((s) => s.includes(EXIT_MARK), 'the CLI to exit', { timeoutMs: ms, history: true })
      await until(() => session.cliPids().length === 0, "the CLI's processes to end", ms)
      const code = Number(new RegExp(`${EXIT_MARK.replace(/[[\]]/g, '\\$&')}(\\d+)\\]`).exec(screen)?.[1])
      return code >= 128 ? null : code
    },
  }
  live.add(session)
  guardExit()
  const timer = setTimeout(() => {
    session.timedOut = true
    session.killSync()
  }, timeoutMs)
  try {
    await tmux(['new-session', '-d', '-s', 'main', '-x', String(cols), '-y', String(rows), '-c', sandbox.work, paneCommand])
    const [serverPid, panePid, socketPath] = (await tmux(['display-message', '-p', '-t', 'main', '#{pid}\t#{pane_pid}\t#{socket_path}'])).trim().split('\t')
    session.serverPid = Number(serverPid) || undefined
    session.panePid = Number(panePid) || undefined
    // Only a socket named as ours is removed at the end.
    if (path.basename(socketPath ?? '') === socket) session.socketPath = socketPath
    await session.waitForScreen(/Type your message/, "the CLI's input prompt", { timeoutMs: readyTimeoutMs })
  } catch (err) {
    session.killSync()
    throw err
  }
  return session
}
