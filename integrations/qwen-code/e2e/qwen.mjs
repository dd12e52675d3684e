// Runs the real Qwen Code CLI headless against the scripted model server: HOME and the workspace in
// temporary folders, telemetry, usage statistics and update checks off, YOLO approvals, stream-json
// output. The CLI leads its own process group; on timeout the whole group is killed.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { collect } from './support.mjs'

export function makeSandbox(prefix = 'tsq-e2e-') {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const home = path.join(root, 'home')
  const work = path.join(root, 'work')
  fs.mkdirSync(path.join(home, '.qwen'), { recursive: true })
  fs.mkdirSync(work)
  fs.writeFileSync(
    path.join(home, '.qwen', 'settings.json'),
    JSON.stringify(
      {
        general: { enableAutoUpdate: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      },
      null,
      2,
    ),
  )
  return { root, home, work, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) }
}

/**
 * Starts `qwen -p <prompt>`; returns { child, done, exited } where done resolves (on 'close') to
 * { code, signal, stdout, stderr, events, timedOut } (events: the parsed stream-json lines).
 * `onEvent(event, ms)` is called with each stream-json event as it arrives (ms: Date.now()).
 */
/**
 * The CLI's environment, headless or interactive: nothing of ours but PATH, a home of the
 * sandbox's, the scripted model server as its OpenAI endpoint, no update checks; then `env`.
 */
export function scriptedEnv(sandbox, modelUrl, env = {}) {
  return {
    PATH: process.env.PATH,
    HOME: sandbox.home,
    USERPROFILE: sandbox.home,
    TMPDIR: process.env.TMPDIR ?? os.tmpdir(),
    LANG: 'C.UTF-8',
    OPENAI_API_KEY: 'sk-scripted',
    OPENAI_BASE_URL: modelUrl,
    OPENAI_MODEL: 'scripted',
    NO_UPDATE_NOTIFIER: '1',
    QWEN_CODE_DISABLE_CRON: '1',
    ...env,
  }
}

export function startQwen({ qwenDir, sandbox, modelUrl, prompt, env = {}, timeoutMs = 180_000, args = [], onEvent }) {
  const child = spawn(
    process.execPath,
    [
      path.join(qwenDir, 'cli-entry.js'),
      '--auth-type',
      'openai',
      '--model',
      'scripted',
      '--approval-mode',
      'yolo',
      '--output-format',
      'stream-json',
      ...args,
      '-p',
      prompt,
    ],
    {
      cwd: sandbox.work,
      detached: process.platform !== 'win32',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: scriptedEnv(sandbox, modelUrl, env),
    },
  )
  if (onEvent) {
    let pending = ''
    child.stdout.on('data', (chunk) => {
      const now = Date.now()
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop()
      for (const line of lines) {
        if (!line.trim()) continue
        try {
          onEvent(JSON.parse(line), now)
        } catch {}
      }
    })
  }
  const done = collect(child, timeoutMs).then((result) => {
    const events = []
    for (const line of result.stdout.split('\n')) {
      if (!line.trim()) continue
      try {
        events.push(JSON.parse(line))
      } catch {}
    }
    return { ...result, events }
  })
  // 'exit' can come long before 'close' when children the CLI left behind hold its stdout or stderr.
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return { child, done, exited }
}

/** Resolves once `file` exists (checked on each fs event of its folder and every 50 ms), or rejects after timeoutMs. */
export function waitForFile(file, timeoutMs = 60_000) {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const tick = () => {
      if (fs.existsSync(file)) return resolve()
      if (Date.now() - started > timeoutMs) return reject(new Error(`${file} did not appear in ${timeoutMs} ms`))
      setTimeout(tick, 50)
    }
    tick()
  })
}
