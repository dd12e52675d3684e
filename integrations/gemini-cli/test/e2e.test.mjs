// The real Gemini CLI 0.61.0, headless, stock and patched side by side in the same run, driven by
// the scripted model server (e2e/model-server.mjs). Linux (the process checks read /proc).
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { patch } from '../lib/patcher.mjs'
import { containmentScenario, monitorScenario, persistScenario, stopScenario, transcriptScenario } from '../e2e/scenarios.mjs'
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
