// Runs the real Gemini CLI headless against the scripted model server: a HOME of the test's own
// (settings: API-key auth, no telemetry, no update checks, shell tool output not summarised), the
// model endpoint on loopback, one node process (GEMINI_CLI_NO_RELAUNCH), tools approved (--yolo).
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { collect } from '../../kit/processes.mjs'

export const MODEL = 'gemini-2.5-flash'

/** A fresh HOME with Gemini's settings for offline runs; removed by `t.after`. */
export function geminiHome(t, extraSettings = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-home-'))
  t?.after(() => fs.rmSync(home, { recursive: true, force: true }))
  const dir = path.join(home, '.gemini')
  fs.mkdirSync(dir, { recursive: true })
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    ui: { hideTips: true, hideBanner: true },
    ...extraSettings,
  }
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2))
  return home
}

/** The environment of a Gemini run against `server` with HOME `home`. */
export function geminiEnv(home, server, extra = {}) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) if (/^(GEMINI|GOOGLE|TASKSTREAM)_/.test(key)) delete env[key]
  return {
    ...env,
    HOME: home,
    GEMINI_API_KEY: 'test-key',
    GOOGLE_GEMINI_BASE_URL: server.url,
    GEMINI_CLI_NO_RELAUNCH: 'true',
    NO_COLOR: '1',
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
    ...extra,
  }
}

/**
 * Starts `gemini -p <prompt>` from the package at `pkgDir`; returns the child (leading its own
 * process group). `done` resolves { code, signal, stdout, stderr, timedOut }; on timeout the group
 * is killed.
 */
export function startGemini(pkgDir, { home, server, prompt, cwd, env = {}, timeoutMs = 120_000 }) {
  const child = spawn(process.execPath, [path.join(pkgDir, 'bundle', 'gemini.js'), '-m', MODEL, '--yolo', '-p', prompt], {
    cwd: cwd ?? home,
    env: geminiEnv(home, server, env),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return { child, done: collect(child, timeoutMs) }
}
