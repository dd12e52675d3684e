// The real Qwen Code CLI 0.24.4, headless against the scripted model server, stock and patched in
// the same run. Linux/macOS: the scenarios run bash commands (the CLI's shell there).
import assert from 'node:assert/strict'
import path from 'node:path'
import { test } from 'node:test'

import { patch } from '../lib/patcher.mjs'
import { blockedSleepMessage, validateMonitorParams } from '../../../index.js'
import { GUARDED_CALLS, chattyScenario, containmentScenario, shellsScenario, taskControlScenario } from '../e2e/scenarios.mjs'
import { copyQwen, requireInstalledQwen } from '../e2e/support.mjs'

const skip = process.platform === 'win32' ? 'the scenarios run bash commands' : false
const linuxOnly = process.platform !== 'linux' ? 'processes are found and killed through /proc' : false

function patchedCopy(t) {
  const dir = copyQwen(t)
  patch(dir)
  return dir
}

const summary = (r) => ({
  code: r.result.code,
  notifications: r.notifications,
  modelBytes: r.modelBytes,
  errorLines: `${r.errorLines.length}/10`,
})

test('chatty dev server through the monitor tool: stock 0/10 error lines reach the model, integrated 10/10', { skip }, async (t) => {
  const stock = await chattyScenario({ qwenDir: requireInstalledQwen() })
  const dir = patchedCopy(t)
  const integrated = await chattyScenario({ qwenDir: dir })
  const switchedOff = await chattyScenario({ qwenDir: dir, env: { TASKSTREAM_QWEN_SIGNAL: '0' } })
  t.diagnostic(`stock ${JSON.stringify(summary(stock))}`)
  t.diagnostic(`integrated ${JSON.stringify(summary(integrated))}`)
  t.diagnostic(`integrated, TASKSTREAM_QWEN_SIGNAL=0 ${JSON.stringify(summary(switchedOff))}`)
  for (const r of [stock, integrated, switchedOff]) {
    assert.equal(r.result.timedOut, false)
    assert.equal(r.result.code, 0, r.result.stderr)
    // The same tool text as stock (monitor ids differ).
    assert.match(r.monitorStarted, /^Monitor started\.\nid: mon_[0-9a-f]{16}\ncommand: CHATTY_DONE_FILE=\S+ bash \S+chatty-server\.sh\ndescription: chatty dev server\nmax_events: 1000\nidle_timeout: 300000ms\n/)
    // /tasks-equivalent state in the stream-json output: the monitor's task_started, then one
    // task_notification per notification handed to the model, the last one completed.
    const id = /^id: (mon_\w+)$/m.exec(r.monitorStarted)[1]
    assert.deepEqual(
      r.taskEvents.filter((e) => e.subtype === 'task_started').map((e) => [e.task_id, e.description]),
      [[id, 'chatty dev server']],
    )
    const statuses = r.taskEvents.filter((e) => e.subtype === 'task_notification' && e.task_id === id).map((e) => e.status)
    assert.ok(statuses.length >= r.notifications, `${statuses.length} task_notification events for ${r.notifications} notifications`)
    assert.equal(statuses.at(-1), 'completed')
    assert.deepEqual(new Set(statuses.slice(0, -1)), new Set(statuses.length > 1 ? ['running'] : []))
    // The monitor's completion reaches the model.
    const last = r.blocks[r.blocks.length - 1]
    assert.match(last, /<status>completed<\/status>/)
    assert.match(last, /<result>Exited with code 0[\n<]/)
  }
  assert.deepEqual(stock.errorLines, [])
  assert.deepEqual(integrated.errorLines, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  // Without the signal setting the integrated CLI throttles as stock does: no error line either.
  assert.deepEqual(switchedOff.errorLines, [])
  assert.match(stock.blocks.at(-1), /lines dropped due to throttling/)
})

test('background shells, task_stop, the output file, the refusals and the stream-json task state: the same texts, files and outcomes as stock, through executeBackground()', { skip }, async (t) => {
  const stock = await shellsScenario({ qwenDir: requireInstalledQwen() })
  const integrated = await shellsScenario({ qwenDir: patchedCopy(t) })
  const norm = (text) =>
    text
      .replace(/bg_[0-9a-f]{8}/g, 'bg_ID')
      .replace(/mon_[0-9a-f]{16}/g, 'mon_ID')
      .replace(/pid: \d+/g, 'pid: N')
      .replace(/\/tmp\/tsq-e2e-\w+/g, 'TMP')
      .replace(/\/tmp\/[0-9a-f]{64}/g, '/tmp/PROJECT')
      .replace(/background-shells\/[0-9a-f-]{36}/g, 'background-shells/SESSION')
  for (const r of [stock, integrated]) {
    assert.equal(r.result.timedOut, false)
    assert.equal(r.result.code, 0, r.result.stderr)
    // A failing shell: its output file holds both streams, its status file says failed with the exit code.
    assert.deepEqual(r.failing.output.split('\n').filter(Boolean).sort(), ['err-1', 'out-1', 'out-2'])
    assert.equal(r.failing.status.status, 'failed')
    assert.equal(r.failing.status.error, 'exited with code 3')
    assert.equal(r.failing.status.id, r.failing.id)
    // task_stop on a shell: cancelled, and the process is gone.
    assert.equal(r.long.aliveBefore, true)
    assert.equal(r.long.status.status, 'cancelled')
    // task_stop on a monitor: its process is gone.
    assert.equal(r.monitor.aliveBefore, true)
    assert.match(r.monitor.stopText, /^Monitor "mon_[0-9a-f]{16}" cancelled\./)
  }
  // The model reads the same texts.
  for (const key of ['failing', 'long', 'monitor']) assert.equal(norm(integrated[key].started), norm(stock[key].started), key)
  assert.equal(norm(integrated.long.stopText), norm(stock.long.stopText))
  assert.equal(norm(integrated.monitor.stopText), norm(stock.monitor.stopText))
  // The integrated CLI ran them natively (taskstream tags its children), with the CLI's environment.
  if (process.platform === 'linux') {
    assert.equal(stock.long.environ.TASKSTREAM_TASK_ID, undefined)
    assert.equal(stock.monitor.environ.TASKSTREAM_TASK_ID, undefined)
    assert.ok(integrated.long.environ.TASKSTREAM_TASK_ID, 'the background shell runs under taskstream')
    assert.ok(integrated.monitor.environ.TASKSTREAM_TASK_ID, 'the monitor runs under taskstream')
    for (const r of [stock, integrated]) {
      assert.equal(r.long.environ.QWEN_CODE, '1')
      assert.equal(r.long.environ.TERM, 'xterm-256color')
      assert.equal(r.monitor.environ.QWEN_CODE, '1')
      assert.equal(r.monitor.environ.TERM, 'dumb')
      assert.equal(r.monitor.environ.PAGER, r === stock ? stock.monitor.environ.PAGER : integrated.monitor.environ.PAGER)
    }
    assert.equal(integrated.monitor.environ.PAGER, stock.monitor.environ.PAGER)
    assert.equal(integrated.long.environ.PAGER, stock.long.environ.PAGER)
  }
  for (const r of [stock, integrated]) {
    // The output file the model is told to read: there, with both streams, colour codes stripped.
    assert.equal(r.failing.output.includes('\x1b'), false, 'no escape sequences in the output file')
    assert.match(r.failing.started, new RegExp(`^output file: ${r.failing.outputFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'))
    // A background shell's completion never reaches the model in headless mode, stock or
    // integrated: the headless loop sets notification callbacks on the subagent and monitor
    // registries only, never on the background-shell registry.
    for (const id of [r.failing.id, r.long.id]) {
      assert.equal(r.notifications.some((b) => b.includes(id)), false, `${id} in a notification`)
      assert.equal(r.taskEvents.some((e) => JSON.stringify(e).includes(id)), false, `${id} in a task event`)
    }
    // The refusals: the sleep guard of run_shell_command and the monitor tool's own check. The
    // patch leaves the CLI's validation alone, and taskstream's guards give the same texts.
    assert.equal(r.guards.length, GUARDED_CALLS.length)
    GUARDED_CALLS.forEach((call, i) => {
      const expected =
        call.tool === 'monitor' ? validateMonitorParams({ command: call.command }, { workspaceDirs: [] }) : blockedSleepMessage(call.command)
      assert.ok(expected, call.command)
      assert.ok(r.guards[i].includes(expected), `${call.command}: ${r.guards[i]}`)
    })
  }
  assert.deepEqual(integrated.guards, stock.guards)
  // /tasks-equivalent state in the stream-json output: the monitor's task_started (id, tool call,
  // description) and its terminal task_notification, the same under both (ids normalised; the
  // running events of a cancelled monitor are dropped by the CLI, so they are left out here).
  const taskState = (r) => {
    const ids = new Map()
    const id = (x) => (x === undefined ? x : (ids.has(x) || ids.set(x, `task${ids.size + 1}`), ids.get(x)))
    return r.taskEvents
      .filter((e) => e.status !== 'running')
      .map((e) => ({ ...e, task_id: id(e.task_id), tool_use_id: e.tool_use_id === undefined ? undefined : 'call' }))
  }
  t.diagnostic(`stream-json task events (stock): ${JSON.stringify(stock.taskEvents)}`)
  t.diagnostic(`stream-json task events (integrated): ${JSON.stringify(integrated.taskEvents)}`)
  assert.deepEqual(taskState(integrated), taskState(stock))
  assert.ok(stock.taskEvents.some((e) => e.subtype === 'task_started' && e.task_id === stock.monitor.id && e.description === 'sleeper'))
  // The taskstream status sidecar says who ended each shell.
  assert.deepEqual(integrated.failing.status.end, { reason: 'exited', by: 'process', exitCode: 3 })
  assert.equal(integrated.long.status.end.reason, 'cancelled')
  assert.equal(path.basename(integrated.failing.outputFile), `shell-${integrated.failing.id}.output`)
})

test('containment: a background shell ignoring SIGTERM with a background child, and a monitor, after the CLI is SIGKILLed and after a normal exit', { skip: linuxOnly }, async (t) => {
  const dir = patchedCopy(t)
  const stockKill = await containmentScenario({ qwenDir: requireInstalledQwen(), mode: 'sigkill' })
  const integratedKill = await containmentScenario({ qwenDir: dir, mode: 'sigkill', waitAllDeadMs: 30_000 })
  const stockExit = await containmentScenario({ qwenDir: requireInstalledQwen(), mode: 'exit' })
  const integratedExit = await containmentScenario({ qwenDir: dir, mode: 'exit', waitAllDeadMs: 30_000 })
  for (const [name, r] of Object.entries({ stockKill, integratedKill, stockExit, integratedExit })) {
    t.diagnostic(`${name}: ${r.survivors}/${r.taskPids.length} task processes alive ${r.survivorsAtMs} ms after the CLI ended (CLI processes killed: ${r.cliProcesses})`)
    assert.equal(r.taskPids.length, 4, name) // bash, its two sleeps, the monitor's sleep
  }
  // All of the CLI's processes were killed (the launcher and the CLI it relaunches).
  assert.ok(stockKill.cliProcesses >= 2 && integratedKill.cliProcesses >= 2)
  // Stock leaves every task process running: nothing can end them once the CLI is gone.
  assert.equal(stockKill.survivors, 4)
  // Integrated: every one of them ends (taskstream's watchdog), however long the machine takes.
  assert.notEqual(integratedKill.allDeadMs, undefined, 'every task process ended after SIGKILL of the CLI')
  // A normal exit ends them all under both.
  assert.notEqual(integratedExit.allDeadMs, undefined, 'every task process ended after a normal exit')
  assert.equal(integratedExit.code, 0)
  assert.equal(stockExit.code, 0)
})

test('task control from the environment: a monitor past TASKSTREAM_QWEN_MEMORY_LIMIT and one past TASKSTREAM_QWEN_TIMEOUT fail, and the model reads why', { skip: process.platform !== 'linux' ? 'limits need cgroups (macOS refuses them; the scenarios run bash)' : false }, async (t) => {
  const env = { TASKSTREAM_QWEN_MEMORY_LIMIT: '64M', TASKSTREAM_QWEN_TIMEOUT: '4s' }
  const r = await taskControlScenario({ qwenDir: patchedCopy(t), env })
  t.diagnostic(JSON.stringify({ leaky: r.leaky.map((b) => b.length), slow: r.slow.map((b) => b.length) }))
  assert.equal(r.result.timedOut, false)
  assert.equal(r.result.code, 0, r.result.stderr)
  assert.equal(r.started.length, 2, JSON.stringify(r.started))
  for (const text of r.started) assert.match(text, /^Monitor started\.\n/)
  const leaky = r.leaky.at(-1)
  assert.match(leaky, /<status>failed<\/status>/)
  assert.match(leaky, /<result>Memory limit of 67108864 bytes reached<\/result>/)
  assert.match(leaky, /<event-count>0<\/event-count>/) // it never printed 'survived'
  const slow = r.slow.at(-1)
  assert.match(slow, /<status>failed<\/status>/)
  assert.match(slow, /<result>Timed out after 4000 ms<\/result>/)
})
