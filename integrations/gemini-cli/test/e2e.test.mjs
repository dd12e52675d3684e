// The real Gemini CLI 0.61.0, headless, stock and patched side by side in the same run, driven by
// the scripted model server (e2e/model-server.mjs). Linux (the process checks read /proc).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'

import { patch } from '../lib/patcher.mjs'
import {
  badTaskControlScenario,
  containmentScenario,
  deadlineScenario,
  monitorScenario,
  persistScenario,
  processLimitScenario,
  stopScenario,
  transcriptScenario,
} from '../e2e/scenarios.mjs'
import { copyGemini } from '../e2e/support.mjs'

const linux = process.platform === 'linux'

/** A stock and a patched copy of the installed CLI. */
function copies(t) {
  const stock = copyGemini(t)
  const patched = copyGemini(t)
  patch(patched)
  return { stock, patched }
}

test('the stock tools tell the model the same texts, word for word, stock and patched', { skip: !linux && 'Linux only' }, async (t) => {
  const { stock, patched } = copies(t)
  const s = await transcriptScenario(t, stock)
  const p = await transcriptScenario(t, patched)
  assert.equal(s.run.code, 0, s.run.stderr)
  assert.equal(p.run.code, 0, p.run.stderr)
  assert.equal(p.run.stdout.trim(), 'finished')
  console.log(JSON.stringify({ stock: s.results, patched: p.results }, null, 2))
  assert.deepEqual(
    p.results.map((r) => r.name),
    ['run_shell_command', 'list_background_processes', 'read_background_output'],
  )
  assert.deepEqual(p.results, s.results)
  // And what the texts say: the job moved to the background under its pid, listed as running, its
  // log read back ANSI-free.
  assert.match(p.results[0].output, /Command moved to background \(PID: <PID>\)/)
  assert.match(p.results[1].output, /\[PID <PID>\] RUNNING/)
  assert.match(p.results[2].output, /one\ntwo\nthree/)
})

test('stop_background_process (patched only): the whole tree of a job that ignores SIGTERM ends, and the history says so', { skip: !linux && 'Linux only' }, async (t) => {
  const { patched } = copies(t)
  const p = await stopScenario(t, patched)
  assert.equal(p.run.code, 0, p.run.stderr)
  assert.ok(p.offered.includes('stop_background_process'), 'the patched CLI offers the tool')
  assert.ok(p.offered.includes('list_background_processes'))
  console.log(JSON.stringify(p.results, null, 2))
  assert.equal(p.processes, 2)
  assert.equal(p.aliveAfterStop, 0, 'no process of the job is left once the tool has answered')
  const [, stop, list, again, stranger] = p.results
  assert.match(stop.output, /^Stopped background process <PID> \((Exit Code: \d+|Signal: \d+)\)\.$/)
  assert.match(list.output, /^- \[PID <PID>\] EXITED: `trap/)
  assert.match(again.output, /^Background process <PID> had already exited/)
  assert.match(stranger.output, /lookup failed for PID <PID>/)
})

test('monitor (patched only), headless: every ERROR line of a chatty dev server reaches the model, in turns of their own after the model ended its turn', { skip: !linux && 'Linux only' }, async (t) => {
  const { stock, patched } = copies(t)
  const p = await monitorScenario(t, patched)
  assert.equal(p.run.code, 0, p.run.stderr)
  assert.ok(p.offered.includes('monitor'))
  assert.match(p.started, /^Monitor started \(ID: mon_[0-9a-f]{16}, PID: \d+\)\. New output lines of `bash .*chatty-server\.sh` will reach you/)
  console.log(`monitor: ${p.errorLines.length}/10 ERROR lines in ${p.updates.length} updates, ${p.updateBytes} bytes of notification text`)
  assert.deepEqual(p.errorLines, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  assert.ok(p.completed, 'the last update says the monitor completed')
  // The stock CLI has no monitor tool.
  const s = await monitorScenario(t, stock)
  assert.ok(!s.offered.includes('monitor'))
  assert.equal(s.updates.length, 0)
})

test('persisted jobs (TASKSTREAM_GEMINI_PERSIST=1): a job of a SIGKILLed session is listed, read and stopped in the next', { skip: !linux && 'Linux only' }, async (t) => {
  const { patched } = copies(t)
  const p = await persistScenario(t, patched)
  assert.equal(p.run.code, 0, p.run.stderr)
  console.log(JSON.stringify(p.results, null, 2))
  assert.ok(p.ranBetween, 'the job outlived the killed session')
  assert.deepEqual(
    p.results.map((r) => r.name),
    ['list_background_processes', 'read_background_output', 'stop_background_process', 'list_background_processes'],
  )
  const [list, read, stop, again] = p.results
  assert.equal(list.output, '- [PID <PID>] RUNNING: `echo persisted-one; sleep ' + again.output.match(/sleep (\d+)/)[1] + ' >> kept.txt 2>&1`')
  assert.equal(read.output, 'Full Log Output:\npersisted-one')
  assert.match(stop.output, /^Stopped background process <PID>/)
  assert.match(again.output, /^- \[PID <PID>\] EXITED: /)
  assert.equal(p.aliveAfter, 0, 'the stopped job is gone')
})

test('the stock CLI offers no tool to stop a background job', { skip: !linux && 'Linux only' }, async (t) => {
  const { stock } = copies(t)
  const s = await stopScenario(t, stock)
  assert.ok(!s.offered.includes('stop_background_process'))
  assert.ok(s.offered.includes('list_background_processes'))
})

for (const end of ['exit', 'sigkill']) {
  test(`a job that ignores SIGTERM, double-forks and writes to files: survivors after ${end === 'exit' ? 'a normal end' : 'a SIGKILL'} of the CLI`, { skip: !linux && 'Linux only' }, async (t) => {
    const { stock, patched } = copies(t)
    const s = await containmentScenario(t, stock, end, { waitAllDeadMs: 0 })
    const p = await containmentScenario(t, patched, end)
    console.log(`containment (${end}): stock ${s.survivors}/${s.processes} alive 2 s after the CLI ended, patched ${p.survivors}/${p.processes}`)
    // Patched: every process of the job ends (taskstream's watchdog), however long the machine takes.
    assert.notEqual(p.allDeadMs, undefined, 'patched: every process of the job ended')
    // Stock leaves the job running (measured for 0.61.0: both processes, after either end).
    assert.equal(s.survivors, s.processes, 'stock: the job outlives the CLI')
  })
}

/**
 * Why this host cannot enforce `limits` (taskstream's Error from executeBackground: no writable
 * cgroup, no delegated controller), or undefined when it can. The patched CLI runs on this machine
 * with the same cgroups as this test process.
 */
async function limitsRefused(t, limits) {
  const { executeBackground, BackgroundShellRegistry } = createRequire(import.meta.url)('../../../index.js')
  const outputDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-probe-'))
  t.after(() => fs.rmSync(outputDir, { recursive: true, force: true }))
  try {
    await executeBackground({ command: 'true', cwd: outputDir, outputDir, registry: new BackgroundShellRegistry(), limits }).done
    return undefined
  } catch (err) {
    return err.message
  }
}

test('task control: with TASKSTREAM_GEMINI_TIMEOUT=1500 a background job and a monitor end by themselves at the deadline, and the history and the model say so', { skip: !linux && 'Linux only' }, async (t) => {
  const { patched } = copies(t)
  const p = await deadlineScenario(t, patched, { TASKSTREAM_GEMINI_TIMEOUT: '1500' })
  assert.equal(p.run.code, 0, p.run.stderr)
  console.log(JSON.stringify({ goneMs: p.goneMs, watcherSeenMs: p.watcherSeenMs, lists: p.lists, results: p.results, updates: p.updates }, null, 2))
  assert.ok(p.runningWhenAnswered, `the job ran when the tool answered: ${JSON.stringify(p.results)}`)
  // The deadline counts from the start, which comes after the model's call: never before 1.5 s,
  // and a few seconds at most after it (SIGTERM to the tree, SIGKILL 200 ms later).
  assert.ok(p.goneMs >= 1500 && p.goneMs < 8000, `the job's process ended ${p.goneMs} ms after the model's call`)
  const [started, ...rest] = p.results
  assert.match(started.output, /^<untrusted_context>\nCommand moved to background \(PID: <PID>\)/)
  const list = rest.filter((r) => r.name === 'list_background_processes').at(-1)
  assert.match(list.output, /^- \[PID <PID>\] EXITED: `sleep \d+` \(Signal: 15\)$/)
  assert.match(rest.find((r) => r.name === 'monitor').output, /^Monitor started \(ID: mon_[0-9a-f]{16}, PID: \d+\)/)
  assert.ok(p.watcherRunning, "the monitor's process ran once the tool had answered")
  assert.equal(p.watcherAlive, 0, "the monitor's process is gone")
  assert.match(p.updates.at(-1), /<status>failed<\/status>/)
  assert.match(p.updates.at(-1), /Timed out after 1500 ms/)
})

test('task control: with TASKSTREAM_GEMINI_MAX_PROCESSES=8 a background job that forks 30 children never has more than 8 processes (stock: all 30 children run)', { skip: !linux && 'Linux only' }, async (t) => {
  const refused = await limitsRefused(t, { maxProcesses: 8 })
  if (refused) return t.skip(`this host cannot enforce limits: ${refused}`)
  const { stock, patched } = copies(t)
  const env = { TASKSTREAM_GEMINI_MAX_PROCESSES: '8' }
  const p = await processLimitScenario(t, patched, env)
  const s = await processLimitScenario(t, stock, env)
  console.log(`process limit: patched at most ${p.maxTree} processes in the job's tree, ${p.maxChildren}/30 children (${p.forkFailures} fork failures in its log: ${JSON.stringify(p.logTail)}), ${p.aliveAfterStop} left after stop_background_process; stock ${s.maxTree} processes, ${s.maxChildren}/30 children`)
  assert.equal(p.run.code, 0, p.run.stderr)
  assert.notEqual(p.pid, undefined, JSON.stringify(p.results))
  // The job's shell, the subshell Gemini wraps each command in, and the children: 8 at most.
  assert.ok(p.maxTree <= 8, `patched: ${p.maxTree} processes at once`)
  assert.ok(p.maxChildren >= 1, 'patched: the job forked')
  assert.ok(p.forkFailures >= 2, "patched: the job's forks failed past the limit")
  assert.match(p.results.find((r) => r.name === 'stop_background_process').output, /^Stopped background process <PID>/)
  assert.equal(p.aliveAfterStop, 0)
  assert.equal(s.run.code, 0, s.run.stderr)
  assert.equal(s.maxChildren, 30, 'stock: the variable means nothing, every child runs')
})

test('task control: bad values are reported: one not a positive whole amount is ignored with a line on stderr, one out of range fails the start and the model reads which variable', { skip: !linux && 'Linux only' }, async (t) => {
  const { patched } = copies(t)
  const p = await badTaskControlScenario(t, patched, { TASKSTREAM_GEMINI_MEMORY_LIMIT: '1', TASKSTREAM_GEMINI_TIMEOUT: 'soon' })
  console.log(JSON.stringify(p.results, null, 2))
  assert.equal(p.run.code, 0, p.run.stderr)
  assert.match(p.run.stderr, /^taskstream-gemini: ignoring TASKSTREAM_GEMINI_TIMEOUT="soon": not a positive whole amount$/m)
  assert.equal(p.ran, 0, 'nothing started')
  const [shell, monitor] = p.results
  assert.equal(shell.name, 'run_shell_command')
  assert.match(shell.output, /^Background process failed to start: The value of "options\.limits\.memoryBytes" is out of range\. .* Received 1 \(TASKSTREAM_GEMINI_MEMORY_LIMIT=1\)$/)
  assert.equal(monitor.name, 'monitor')
  // The monitor tool's error (`Monitor failed to start: …` is what the UI shows): the model reads its message.
  assert.match(monitor.output, /^The value of "options\.limits\.memoryBytes" is out of range\. .* Received 1 \(TASKSTREAM_GEMINI_MEMORY_LIMIT=1\)$/)
})
