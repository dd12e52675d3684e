// The real Gemini CLI 0.61.0 in its interactive UI, in tmux (a real pty), against the scripted model
// server, stock and patched in the same run: the prompt typed with send-keys, the screen read with
// capture-pane (e2e/interactive.mjs, e2e/interactive-scenarios.mjs). Linux: the job processes are
// found through /proc.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'

import { patch } from '../lib/patcher.mjs'
import { copyForInteractive, tmuxMissing } from '../e2e/interactive.mjs'
import { interactiveContainmentScenario, interactiveJobsScenario, interactiveMonitorScenario, interactiveTerminalScenario } from '../e2e/interactive-scenarios.mjs'

const skip = process.platform !== 'linux' ? 'the job processes are found and killed through /proc' : tmuxMissing()
const timeout = 300_000

// A stock and a patched copy, each with the installed node-pty beside it (the UI's shell runs on it).
const dirs = {}
const roots = []
before(() => {
  if (skip) return
  for (const name of ['stock', 'patched']) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), `taskstream-gemini-interactive-${name}-`))
    roots.push(root)
    dirs[name] = copyForInteractive(root)
  }
  patch(dirs.patched)
})
after(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true })
})

// One session per variant serves the two tests of background jobs.
const jobsRuns = new Map()
function jobsRun(name) {
  if (!jobsRuns.has(name)) {
    const p = interactiveJobsScenario({ pkgDir: dirs[name] })
    p.catch(() => {}) // awaited by each test that uses it
    jobsRuns.set(name, p)
  }
  return jobsRuns.get(name)
}

test('interactive: a background run_shell_command works stock and patched, the patched job under taskstream; the background panel streams it and its kill ends it', { skip, timeout }, async (t) => {
  const runs = {}
  for (const name of ['stock', 'patched']) runs[name] = await jobsRun(name)
  for (const [name, r] of Object.entries(runs)) {
    const facts = r.ticker.processes.map((p) => `${p.pid}: tag ${p.taskId ?? 'none'}, session ${p.sid}, ${p.tty ? 'on a pty' : 'no terminal'}, cgroup ${p.cgroup}`)
    t.diagnostic(`${name}: the job's processes: ${facts.join('; ')}`)
    t.diagnostic(
      `${name}: panel (Ctrl+B) showed tick ${r.panel.firstTick}, then tick ${r.panel.laterTick} (live: ${r.panel.live}); ` +
        `Ctrl+K: ${r.uiKill.allDeadMs !== undefined ? `all ${r.uiKill.processes} processes gone in ${r.uiKill.allDeadMs} ms` : `${r.uiKill.survivors}/${r.uiKill.processes} left`}; prompts retyped: ${r.retyped}`,
    )
    assert.ok(r.ticker.processes.length >= 2, `${name}: the job's shell and the ticker (and its sleep of the moment)`)
    assert.ok(r.panel.live, `${name}: the panel shows the job's new output as it comes`)
    assert.notEqual(r.uiKill.allDeadMs, undefined, `${name}: the panel's kill ends every process of the job`)
  }
  // Patched: every process of the job carries taskstream's tag (one task), on taskstream's terminal
  // (the UI's pty path runs in its terminal mode); stock: no tag, on node-pty's.
  assert.ok(runs.patched.ticker.processes.every((p) => p.tty), 'patched: the job is on a terminal')
  assert.ok(runs.stock.ticker.processes.every((p) => p.tty), 'stock: the job is on a pty')
  const ids = new Set(runs.patched.ticker.processes.map((p) => p.taskId))
  assert.equal(ids.size, 1)
  assert.match([...ids][0] ?? '', /^[0-9a-f]+-[0-9a-f]+-\d+$/, 'TASKSTREAM_TASK_ID')
  assert.ok(runs.stock.ticker.processes.every((p) => p.taskId === undefined))
})

test('interactive: list_background_processes and read_background_output tell the model the same as stock, but for the pty\'s carriage returns', { skip, timeout }, async (t) => {
  const s = await jobsRun('stock')
  const p = await jobsRun('patched')
  t.diagnostic(JSON.stringify({ stock: s.results, patched: p.results }))
  const names = ['run_shell_command', 'run_shell_command', 'list_background_processes', 'read_background_output']
  assert.deepEqual(s.results.map((r) => r.name), names)
  assert.deepEqual(p.results.map((r) => r.name), names)
  // Word for word, the starts and the listing.
  assert.deepEqual(p.results.slice(0, 3), s.results.slice(0, 3))
  assert.match(p.results[0].output, /Command moved to background \(PID: <PID>\)/)
  assert.match(p.results[2].output, /^- \[PID <PID>\] RUNNING: `export TSG_TICKER=<TAG>; bash ticker\.sh`\n- \[PID <PID>\] RUNNING: `while/)
  // The log: stock's job wrote to a pty, so its lines end in \r\n; taskstream's file is the output
  // as printed, as the headless CLI's log (e2e.test.mjs) is. Otherwise the same.
  assert.equal(p.results[3].output, 'Full Log Output:\none\ntwo\nthree')
  assert.equal(s.results[3].output.replace(/\r/g, ''), p.results[3].output)
})

for (const end of ['sigkill', 'quit']) {
  test(`interactive: jobs that ignore SIGTERM and double-fork, after ${end === 'sigkill' ? 'a SIGKILL of the CLI' : '/quit'}: the nohup-style one outlives stock, nothing outlives the patched CLI`, { skip, timeout }, async (t) => {
    const runs = {}
    for (const name of ['stock', 'patched']) {
      runs[name] = await interactiveContainmentScenario({ pkgDir: dirs[name], end, waitAllDeadMs: name === 'patched' ? 30_000 : 0 })
    }
    for (const [name, r] of Object.entries(runs)) {
      t.diagnostic(
        `${name} (${end}, exit code ${r.code}): alive ${r.survivorsAtMs} ms after the CLI ended: ` +
          `job ignoring TERM ${r.plain.survivors}/${r.plain.processes}, job ignoring TERM and HUP ${r.nohup.survivors}/${r.nohup.processes}` +
          (r.allDeadMs !== undefined ? `; all gone ${r.allDeadMs} ms after the end` : ''),
      )
      assert.equal(r.plain.processes, 2)
      assert.equal(r.nohup.processes, 2)
      if (end === 'quit') assert.equal(r.code, 0, `${name}: /quit exits with 0`)
    }
    assert.notEqual(runs.patched.allDeadMs, undefined, 'patched: every process of both jobs ended')
    assert.equal(runs.stock.nohup.survivors, 2, 'stock: the nohup-style job outlives the CLI')
  })
}

const TASK_ID = /^[0-9a-f]+-[0-9a-f]+-\d+$/

for (const end of ['ctrlc', 'sigkill']) {
  test(`interactive: a background job and a foreground command moved to the background with Ctrl+B run in a terminal, log ANSI-clean at Gemini's path, and ${end === 'ctrlc' ? 'end with the CLI quit by Ctrl+C twice' : 'end with the CLI SIGKILLed'} (patched${end === 'ctrlc' ? '; stock alongside' : ''})`, { skip, timeout }, async (t) => {
    const runs = {}
    for (const name of end === 'ctrlc' ? ['stock', 'patched'] : ['patched']) {
      runs[name] = await interactiveTerminalScenario({ pkgDir: dirs[name], end, waitAllDeadMs: name === 'patched' ? 30_000 : 0 })
    }
    for (const [name, r] of Object.entries(runs)) {
      for (const [job, j] of Object.entries(r.jobs)) {
        t.diagnostic(`${name} ${job}: ${j.processes} processes, the leader ${j.leader.tty ? 'on a terminal' : 'on no terminal'}, tag ${j.leader.taskId ?? 'none'}, cgroup ${j.leader.cgroup}; log ${j.log ? JSON.stringify(j.log) : 'none'}`)
      }
      t.diagnostic(
        `${name} (${end}, exit code ${r.code}${r.ctrlCAttempts ? `, ${r.ctrlCAttempts} double Ctrl+C` : ''}): ${r.survivors}/${r.of} alive ${r.survivorsAtMs} ms after the CLI ended` +
          (r.allDeadMs !== undefined ? `; all gone ${r.allDeadMs} ms after the end` : ''),
      )
      t.diagnostic(`${name} results: ${JSON.stringify(r.results.map((x) => ({ name: x.name, output: x.output.slice(0, 160) })))}`)
      assert.deepEqual(r.results.map((x) => x.name), ['run_shell_command', 'run_shell_command', 'list_background_processes', 'read_background_output', 'read_background_output'])
      assert.match(r.results[0].output, /Command moved to background \(PID: <PID>\)/)
      assert.match(r.results[1].output, /Command moved to background \(PID: <PID>\)/, `${name}: Ctrl+B moved the foreground command`)
      for (const j of Object.values(r.jobs)) {
        assert.equal(j.processes, 3)
        assert.ok(j.leader.tty && j.allOnTty, `${name}: every process of each job on a terminal`)
      }
      if (end === 'ctrlc') assert.equal(r.code, 0, `${name}: Ctrl+C twice quits with 0`)
    }
    const p = runs.patched
    for (const job of ['bg', 'fg']) {
      assert.match(p.jobs[job].leader.taskId ?? '', TASK_ID, `${job}: a taskstream task`)
      assert.deepEqual(p.jobs[job].log, { head: `TTY ${job}\ngreen ${job}\n${job} tick 1`, ansi: false, cr: false, ticks: p.jobs[job].log.ticks })
    }
    assert.notEqual(p.jobs.bg.leader.taskId, p.jobs.fg.leader.taskId)
    // The model lists and reads both (the foreground one as Gemini lists an is_background job).
    assert.match(p.results[2].output, /^- \[PID <PID>\] RUNNING: `bash term\.sh bg \d+`\n- \[PID <PID>\] RUNNING: `bash term\.sh fg \d+`/)
    assert.match(p.results[3].output, /^Full Log Output:\nTTY bg\ngreen bg\nbg tick 1\n/)
    assert.match(p.results[4].output, /^Full Log Output:\nTTY fg\ngreen fg\nfg tick 1\n/)
    assert.equal(p.survivors, 0)
    assert.notEqual(p.allDeadMs, undefined, 'patched: every process of both jobs ended')
    const s = runs.stock
    if (s) {
      // Stock: both on node-pty; the is_background job's log keeps the pty's carriage returns; the
      // command moved with Ctrl+B is in no history and has no log; both outlive the CLI.
      assert.equal(s.jobs.bg.leader.taskId, undefined)
      assert.equal(s.jobs.bg.log.cr, true)
      assert.equal(s.jobs.fg.log, undefined)
      assert.equal(s.results[4].output, 'Background process history lookup failed for PID <PID>')
      assert.ok(s.survivors > 0, 'stock: the jobs outlive the CLI')
    }
  })
}

test('interactive: the monitor tool delivers every ERROR line of a chatty dev server to the model, each update a turn of its own, a row or two on screen (patched; stock has no monitor)', { skip, timeout }, async (t) => {
  const p = await interactiveMonitorScenario({ pkgDir: dirs.patched })
  t.diagnostic(
    `patched: to the model ${p.errorLines.length}/10 ERROR lines in ${p.updates.length} updates (${p.notifications} notifications, ${p.ownTurns} updates as turns of their own), ${p.modelBytes} bytes; ` +
      `on screen ${p.screen.items} monitor items in ${p.screen.rows} rows, ${p.screen.errorLines.length}/10 ERROR lines; ${p.requests} model requests`,
  )
  t.diagnostic(`the monitor's rows on screen:\n${p.screen.text}`)
  assert.ok(p.offered.includes('monitor'))
  assert.match(p.started, /^Monitor started \(ID: mon_[0-9a-f]{16}, PID: \d+\)\./)
  assert.deepEqual(p.errorLines, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  assert.equal(p.lastStatus, 'completed')
  // With model steering off (the default), the UI still hands every update over as a turn.
  assert.equal(p.ownTurns, p.updates.length)
  // Each notification shows as one history item of a row or two (its short display text); the end's
  // item is its summary row plus the last held lines it carries (§6.7: the end rides in the terminal
  // notification), one row more at most. Under load fewer, fuller updates come (4 instead of 5).
  assert.equal(p.screen.items, p.notifications)
  assert.ok(p.screen.rows <= 2 * p.screen.items + 1, `${p.screen.rows} rows for ${p.screen.items} items`)
  assert.match(p.screen.text, /Monitor "dev server" completed/)

  const s = await interactiveMonitorScenario({ pkgDir: dirs.stock })
  assert.ok(!s.offered.includes('monitor'), 'the stock CLI has no monitor tool')
})
