// A terminal for the interactive suites: a CLI in a pane of a private tmux server (a real pty), typed
// into with `send-keys` and read with `capture-pane -p`. One tmux server per session
// (`tmux -L <unique socket>`), so sessions never see each other or a user's tmux. The pane runs the
// CLI under `/bin/sh` with exactly the given environment (`env -i`); the shell stays after the CLI
// exits, as a user's shell would, and prints the exit code. Every tmux command has a timeout; the
// session has one too, and on it (or on `kill()`, or when this process exits or is told to) every
// process of the pane is SIGKILLed and the tmux server killed.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { descendants, isAlive, killPids, nodeDescendants, run, until } from './processes.mjs'

/** Why tmux cannot be used here, or false. */
export function tmuxMissing(setupHint = 'the e2e setup installs it on Debian/Ubuntu') {
  if (process.platform === 'win32') return 'tmux does not run on Windows'
  const r = spawnSync('tmux', ['-V'], { encoding: 'utf8', timeout: 10_000 })
  if (r.error || r.status !== 0) return `tmux is not installed (${setupHint})`
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

export const EXIT_MARK = '[ts-cli-exited code='

/**
 * Starts `argv` in a new private tmux server, in a pane of `cols` × `rows` with a history of
 * 200 000 lines, in `cwd`, with exactly `env`. `confDir` receives the tmux configuration file.
 * Resolves to the session once `ready` (a RegExp) shows on screen.
 */
export async function startTmux({ argv, env, cwd, confDir, ready, cols = 200, rows = 50, timeoutMs = 180_000, readyTimeoutMs = 90_000, prefix = 'ts' }) {
  const socket = `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  const conf = path.join(confDir, `tmux-${socket}.conf`)
  fs.writeFileSync(
    conf,
    ['set -g history-limit 200000', 'set -g status off', 'set -g default-shell /bin/sh', 'set -g default-terminal screen-256color', 'set -g escape-time 0', ''].join('\n'),
  )
  const holdSeconds = Math.ceil(timeoutMs / 1000) + 60
  const script = `"$@"; echo "${EXIT_MARK}$?]"; exec sleep ${holdSeconds}`
  const paneCommand = ['exec', 'env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), '/bin/sh', '-c', script, 'sh', ...argv]
    .map((a, i) => (i === 0 ? a : shq(a)))
    .join(' ')

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
      fs.rmSync(conf, { force: true })
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
    /**
     * Types a line into the prompt: the text, a check that it shows, then Enter. With `retypeMs`, text
     * that has not shown after that long is typed again (at most `attempts` times in all): a UI can
     * drop keys while it moves its focus. `session.retyped` counts the extra attempts. With
     * `submitted(screen)`, an Enter the UI dropped (the text still waits in the input box after 5 s)
     * is pressed again, at most `attempts` times in all.
     */
    async submit(text, { timeoutMs: ms = 30_000, retypeMs, attempts = 3, submitted } = {}) {
      for (let attempt = 1; ; attempt++) {
        await session.type(text)
        const last = !retypeMs || attempt >= attempts
        const shown = await session
          .waitForScreen((s) => s.includes(text), `"${text}" in the input box`, { timeoutMs: last ? ms : retypeMs })
          .then(() => true, (err) => {
            if (last) throw err
            return false
          })
        if (shown) break
        session.retyped++
      }
      await session.keys('Enter')
      if (!submitted) return
      for (let attempt = 1; ; attempt++) {
        const done = await session
          .waitForScreen(submitted, `"${text}" submitted`, { timeoutMs: 5_000 })
          .then(() => true, (err) => {
            if (attempt >= attempts) throw err
            return false
          })
        if (done) return
        session.retyped++
        await session.keys('Enter')
      }
    },
    retyped: 0,
    /**
     * Two Ctrl+C, the way a user quits a CLI that asks for a second one: the first, then (once
     * `prompt` shows: the CLI's "press Ctrl+C again" line, which it may take back after a while) the
     * second. When the CLI shows no sign of quitting within 5 s (`quitting(screen)`, the exit mark on
     * screen, or none of its node processes left), the pair is sent again, at most `attempts` times.
     * Resolves with the number of pairs sent, once the CLI is quitting.
     */
    async doubleCtrlC({ prompt = /Press Ctrl\+C again to exit/, quitting = () => false, attempts = 5, timeoutMs: ms = 20_000 } = {}) {
      for (let attempt = 1; attempt <= attempts; attempt++) {
        await session.keys('C-c')
        await session.waitForScreen(prompt, 'the Ctrl+C exit prompt', { timeoutMs: ms, pollMs: 30, join: false })
        await session.keys('C-c')
        if (session.cliPids().length === 0) return attempt
        const accepted = await session
          .waitForScreen((s) => quitting(s) || s.includes(EXIT_MARK), 'the CLI to quit', { timeoutMs: 5_000, pollMs: 100, join: false })
          .then(() => true, () => session.cliPids().length === 0)
        if (accepted) return attempt
      }
      throw new Error(`the CLI did not quit after ${attempts} double Ctrl+C`)
    },
    /** The CLI's node processes: the pane's node descendants. */
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
    await tmux(['new-session', '-d', '-s', 'main', '-x', String(cols), '-y', String(rows), '-c', cwd, paneCommand])
    const [serverPid, panePid, socketPath] = (await tmux(['display-message', '-p', '-t', 'main', '#{pid}\t#{pane_pid}\t#{socket_path}'])).trim().split('\t')
    session.serverPid = Number(serverPid) || undefined
    session.panePid = Number(panePid) || undefined
    // Only a socket named as ours is removed at the end.
    if (path.basename(socketPath ?? '') === socket) session.socketPath = socketPath
    if (ready) await session.waitForScreen(ready, "the CLI's input prompt", { timeoutMs: readyTimeoutMs })
  } catch (err) {
    session.killSync()
    throw err
  }
  return session
}
