// The real Qwen Code CLI 0.24.4 in its interactive mode, in tmux (a real pty), against the scripted
// model server, stock and patched in the same run: the prompt is typed with send-keys, the screen
// read with capture-pane (e2e/interactive.mjs, e2e/interactive-scenarios.mjs). Linux: the task
// processes are found through /proc.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'

import { patch } from '../lib/patcher.mjs'
import { tmuxMissing } from '../e2e/interactive.mjs'
import { interactiveChattyScenario, interactiveKillScenario, interactiveTasksScenario } from '../e2e/interactive-scenarios.mjs'
import { requireInstalledQwen } from '../e2e/support.mjs'

const skip = process.platform !== 'linux' ? 'the task processes are found and killed through /proc' : tmuxMissing()
const timeout = 360_000

let root
let patchedDir
before(() => {
  if (skip) return
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'taskstream-qwen-interactive-'))
  patchedDir = path.join(root, 'node_modules', '@qwen-code', 'qwen-code')
  fs.cpSync(requireInstalledQwen(), patchedDir, { recursive: true, verbatimSymlinks: true })
  patch(patchedDir)
})
after(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true })
})

const dirOf = (name) => (name === 'stock' ? requireInstalledQwen() : patchedDir)

// One session per variant serves the three tests of background shells: the completion, /tasks, two Ctrl+C.
const tasksRuns = new Map()
function tasksRun(name) {
  if (!tasksRuns.has(name)) {
    const p = interactiveTasksScenario({ qwenDir: dirOf(name), waitAllDeadMs: name === 'patched' ? 30_000 : 0 })
    p.catch(() => {}) // awaited by each test that uses it
    tasksRuns.set(name, p)
  }
  return tasksRuns.get(name)
}

test('interactive: the chatty dev server through the monitor tool, on screen and at the model: stock 0/10 error lines reach the model, patched 10/10', { skip, timeout }, async (t) => {
  const runs = {}
  for (const name of ['stock', 'patched']) runs[name] = await interactiveChattyScenario({ qwenDir: dirOf(name) })
  for (const [name, r] of Object.entries(runs)) {
    t.diagnostic(
      `${name}: monitor rows on screen ${r.screen.rows} (${r.screen.items} notifications shown, ${r.cols} columns), error lines on screen ${r.screen.errorLines.length}/10; ` +
        `to the model: ${r.notifications} notifications, ${r.modelBytes} bytes, error lines ${r.errorLines.length}/10; ${r.requests} model requests; CLI ready in ${r.readyMs} ms`,
    )
  }
  for (const r of Object.values(runs)) {
    assert.match(r.monitorStarted, /^Monitor started\.\nid: mon_[0-9a-f]{16}\n/)
    // The monitor's completion reached the model and shows on screen.
    assert.equal(r.lastStatus, 'completed')
    assert.ok(r.screen.items >= 1, 'monitor notifications on screen')
    assert.match(r.screen.text, /Monitor "chatty dev server" completed/)
  }
  assert.deepEqual(runs.patched.errorLines, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
})

test("interactive: a background shell's completion reaches the model, stock and patched", { skip, timeout }, async (t) => {
  for (const name of ['stock', 'patched']) {
    const r = await tasksRun(name)
    t.diagnostic(`${name}: ${r.notifications.length} notifications to the model; the short shell's completion on screen: ${r.shortCompletionOnScreen}`)
    assert.ok(r.shortCompletion, `${name}: the short shell's completion notification reached the model`)
    assert.match(r.shortCompletion, /<kind>shell<\/kind>\n<status>completed<\/status>/)
    assert.match(r.shortCompletion, /<exit-code>0<\/exit-code>/)
    assert.match(r.shortCompletion, /<output-tail[^>]*>short-\d+ done<\/output-tail>/)
  }
})

test('interactive: /tasks typed while tasks run lists them, stock and patched', { skip, timeout }, async (t) => {
  for (const name of ['stock', 'patched']) {
    const r = await tasksRun(name)
    t.diagnostic(`${name}: /tasks listed ${JSON.stringify(r.tasks)}`)
    assert.equal(r.tasks[r.ids.daemon], 'running', `${name}: the daemon shell`)
    assert.equal(r.tasks[r.ids.writer], 'running', `${name}: the writer shell`)
    assert.equal(r.tasks[r.ids.monitor], 'running', `${name}: the monitor`)
    assert.equal(r.tasks[r.ids.short], 'completed', `${name}: the short shell`)
  }
})

test('interactive: two Ctrl+C with background shells and a monitor running: no task process survives the patched CLI', { skip, timeout }, async (t) => {
  const runs = {}
  for (const name of ['stock', 'patched']) runs[name] = await tasksRun(name)
  for (const [name, r] of Object.entries(runs)) {
    t.diagnostic(
      `${name}: exit code ${r.code} after ${r.ctrlCAttempts} double Ctrl+C (${r.quitMs} ms to exit); ${r.survivors}/${r.taskPids.length} task processes alive ${r.survivorsAtMs} ms after the CLI ended; ` +
        `marked processes left ${r.markedAlive}; the file still growing after the exit: ${r.fileGrewAfterExit}`,
    )
    assert.equal(r.taskPids.length, 5, name) // the daemon's bash and its two sleeps, the writer's bash, the monitor's sleep
    assert.equal(r.aliveBeforeQuit, 5, name)
    assert.equal(r.code, 0, `${name}: the CLI's exit code`)
  }
  const p = runs.patched
  assert.notEqual(p.allDeadMs, undefined, 'every task process of the patched CLI ended')
  assert.equal(p.markedAlive, 0, 'no process of the tasks is left')
  assert.equal(p.fileGrewAfterExit, false, 'nothing writes to the file after the exit')
})

test("interactive: SIGKILL of the CLI's node processes in the pane: no task process survives the patched CLI", { skip, timeout }, async (t) => {
  const runs = {}
  for (const name of ['stock', 'patched']) {
    runs[name] = await interactiveKillScenario({ qwenDir: dirOf(name), waitAllDeadMs: name === 'patched' ? 30_000 : 0 })
  }
  for (const [name, r] of Object.entries(runs)) {
    t.diagnostic(`${name}: ${r.survivors}/${r.taskPids.length} task processes alive ${r.survivorsAtMs} ms after the CLI's ${r.cliProcesses} node processes were SIGKILLed`)
    assert.equal(r.taskPids.length, 4, name) // bash, its two sleeps, the monitor's sleep
    assert.ok(r.cliProcesses >= 2, `${name}: the launcher and the CLI it relaunches`)
  }
  assert.notEqual(runs.patched.allDeadMs, undefined, 'every task process of the patched CLI ended')
})
