// Scenarios against the real Gemini CLI in its interactive UI (in tmux, see interactive.mjs), each run
// the same way on a stock and on a patched copy. The scripted model answers by the last turn of each
// request (the prompt typed, a tool's result, a monitor update), not by the request's number. Every
// wait is on a condition (text on screen, a process, a request at the model server), never a fixed
// sleep; every session has a timeout, and every process a scenario starts is killed at its end.
import fs from 'node:fs'
import path from 'node:path'

import { idle, makeSandbox, startInteractiveGemini } from './interactive.mjs'
import { startModelServer, turns } from './model-server.mjs'
import { CHATTY, TRANSCRIPT_JOB, backgroundPid, normalisedResults, offeredTools, stubbornJob } from './scenarios.mjs'
import { environOf, isAlive, killPids, observeSurvivors, pidsByArgv, pidsWithEnv, until } from './support.mjs'

/**
 * A scripted model: `steps` is a list of `[when(last, body), reply(last, body)]`; the first whose
 * `when` holds for the request's last turn answers it; anything else gets "Noted.".
 */
function scripted(steps) {
  return async (body) => {
    const last = turns(body).at(-1) ?? { text: '', responses: [] }
    for (const [when, reply] of steps) if (when(last, body)) return reply(last, body)
    return { text: 'Noted.' }
  }
}

const said = (text) => (last) => last.role === 'user' && last.text.includes(text)
const answered = (name) => (last) => last.responses.some((r) => r.name === name)
const call = (name, args) => ({ toolCalls: [{ name, args }] })
const shell = (command, description) => call('run_shell_command', { command, description, is_background: true })
/** How many results of run_shell_command the conversation holds. */
const shellResults = (body) => turns(body).flatMap((t) => t.responses).filter((r) => r.name === 'run_shell_command').length

/** Whether the background panel is open on screen, focused on `pid`. */
const panelOf = (screen, pid) => screen.includes(`(PID: ${pid}) (Focused)`)

/** The numbers after `tick ` on a screen. */
const ticks = (screen) => [...screen.matchAll(/\btick (\d+)\b/g)].map((m) => Number(m[1]))

/** What /proc says of a process: its session, whether it is on a terminal, its cgroup (v2 line). */
function procFacts(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const cgroup = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'))?.slice(3)
    return { pgid: Number(f[2]), sid: Number(f[3]), tty: Number(f[4]) !== 0, cgroup }
  } catch {
    return undefined
  }
}

/**
 * Background jobs from the interactive UI, in one session:
 *  1. "Start the ticker.": a background `run_shell_command` running a script that prints `tick N`
 *     every 200 ms (its processes marked by a variable unique to the run). Read from /proc: whether
 *     they carry taskstream's tag `TASKSTREAM_TASK_ID`, their session, terminal and cgroup.
 *  2. Ctrl+B opens the background panel: the ticks it shows, and whether they go on (the live view).
 *  3. "Run the job.": the headless transcript scenario's job, `list_background_processes` while it
 *     runs, `read_background_output` once it printed its lines and ended: the texts the model gets.
 *  4. Ctrl+B, then Ctrl+K (the panel's kill) on the ticker: how long until its processes are gone.
 */
export async function interactiveJobsScenario({ pkgDir, env = {}, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox()
  const tag = `${process.pid}${Math.floor(Math.random() * 1e6)}`
  fs.writeFileSync(path.join(sandbox.work, 'ticker.sh'), 'i=0\nwhile [ $i -lt 600 ]; do i=$((i+1)); echo "tick $i"; sleep 0.2; done\n')
  const tickerCommand = `export TSG_TICKER=${tag}; bash ticker.sh`
  const go = path.join(sandbox.work, 'go')
  const logOf = (pid) => path.join(sandbox.home, '.gemini', 'tmp', 'background-processes', `background-${pid}.log`)
  let jobPid
  const server = await startModelServer(
    scripted([
      [said('Start the ticker.'), () => shell(tickerCommand, 'ticker')],
      [(last, body) => answered('run_shell_command')(last) && !turns(body).some((x) => said('Run the job.')(x)), () => ({ text: 'Ticker started.' })],
      [said('Run the job.'), () => shell(TRANSCRIPT_JOB, 'a job that waits')],
      [
        answered('run_shell_command'),
        (last) => {
          jobPid = Number(/\(PID: (\d+)\)/.exec(last.responses[0].output)?.[1])
          return call('list_background_processes', {})
        },
      ],
      [
        answered('list_background_processes'),
        async () => {
          fs.writeFileSync(go, '')
          await until(() => !isAlive(jobPid) && fs.readFileSync(logOf(jobPid), 'utf8').includes('three'), 'the job to print its lines and end', 60_000)
          return call('read_background_output', { pid: jobPid })
        },
      ],
      [answered('read_background_output'), () => ({ text: 'finished' })],
    ]),
  )
  let session
  let tickerPid
  const tickerPids = () => [...new Set([...(tickerPid && isAlive(tickerPid) ? [tickerPid] : []), ...pidsWithEnv('TSG_TICKER', tag)])]
  const r = {}
  try {
    session = await startInteractiveGemini({ pkgDir, sandbox, server, env, timeoutMs })
    await session.submit('Start the ticker.')
    await session.waitForScreen((s) => s.includes('Ticker started.') && idle(s), 'the ticker to start', { timeoutMs: timeoutMs / 4 })
    tickerPid = backgroundPid(server.requests)
    const marked = await until(() => (pidsWithEnv('TSG_TICKER', tag).length > 0 ? pidsWithEnv('TSG_TICKER', tag) : undefined), "the ticker's processes", 30_000)
    // A process that ended while it was being read (the ticker's `sleep 0.2` of the moment) is left out.
    const read = (pid) => {
      const env = environOf(pid)
      const facts = procFacts(pid)
      return facts && Object.keys(env).length > 0 && isAlive(pid) ? { pid, taskId: env.TASKSTREAM_TASK_ID, ...facts } : undefined
    }
    r.ticker = { pid: tickerPid, processes: [tickerPid, ...marked].map(read).filter(Boolean) }

    // The background panel: its ticks, then more of them.
    await session.keys('C-b')
    const first = await session.waitForScreen((s) => panelOf(s, tickerPid) && ticks(s).length > 0, 'the background panel', { timeoutMs: 20_000 })
    r.panel = { firstTick: Math.max(...ticks(first)), shows: first.split('\n').filter((l) => /\btick \d+/.test(l)).length }
    const later = await session
      .waitForScreen((s) => Math.max(0, ...ticks(s)) >= r.panel.firstTick + 5, 'the panel to show new ticks', { timeoutMs: 15_000 })
      .catch(() => undefined)
    r.panel.laterTick = later ? Math.max(...ticks(later)) : Math.max(0, ...ticks(await session.capture()))
    r.panel.live = Boolean(later)
    await session.keys('C-b')
    await session.waitForScreen((s) => !panelOf(s, tickerPid) && idle(s), 'the panel to close', { timeoutMs: 20_000 })

    // The stock tools' texts. (Keys typed just as the panel hands the focus back can be lost: retyped.)
    // (An Enter typed while the UI is still busy can be dropped too: pressed again until the prompt
    // shows in the history.)
    await session.submit('Run the job.', { retypeMs: 5_000, submitted: (s) => s.includes('> Run the job.') })
    await session.waitForScreen((s) => /✦ finished/.test(s) && idle(s), 'the job transcript', { timeoutMs: timeoutMs / 3 })
    r.jobPid = jobPid
    r.results = normalisedResults(server.requests, [tickerPid, jobPid]).map((x) => ({ ...x, output: x.output.split(tag).join('<TAG>') }))

    // The panel's kill.
    await session.keys('C-b')
    // With two jobs in the panel it opens on its list, the ticker (the first) highlighted.
    await session.waitForScreen((s) => panelOf(s, tickerPid), 'the background panel', { timeoutMs: 20_000 })
    const alive = tickerPids()
    const killedAt = Date.now()
    await session.keys('C-k')
    r.uiKill = { processes: alive.length }
    r.retyped = session.retyped
    await until(() => alive.every((p) => !isAlive(p)), "the ticker's processes to end after Ctrl+K", 15_000)
      .then(() => (r.uiKill.allDeadMs = Date.now() - killedAt))
      .catch(() => (r.uiKill.survivors = alive.filter(isAlive).length))
    return r
  } finally {
    killPids(tickerPids())
    await session?.kill()
    await server.close()
    sandbox.cleanup()
  }
}

/**
 * Containment in the interactive UI: two background jobs started from one prompt, each ignoring
 * SIGTERM, double-forking one sleep and keeping another (the headless containment scenario's job),
 * the second ignoring SIGHUP too (as `nohup` would make it). Once both run and the turn is over the
 * CLI ends: `end` 'sigkill' (every node process of the CLI in the pane, SIGKILLed) or 'quit' (/quit
 * typed). Returns, per job, its processes alive `observeMs` after the CLI ended, and with
 * `waitAllDeadMs` when the last of the four was gone (`allDeadMs`).
 */
export async function interactiveContainmentScenario({ pkgDir, end, env = {}, observeMs = 2000, waitAllDeadMs = 0, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox()
  const plain = stubbornJob('5')
  const nohup = stubbornJob('6', { hup: true })
  const server = await startModelServer(
    scripted([
      [said('Start the daemons.'), () => shell(plain.command, 'a stubborn job')],
      [(last, body) => answered('run_shell_command')(last) && shellResults(body) === 1, () => shell(nohup.command, 'a nohup-style job')],
      [answered('run_shell_command'), () => ({ text: 'Both running.' })],
    ]),
  )
  let session
  let pids = {}
  const all = () => [...(pids.plain ?? plain.find() ?? []), ...(pids.nohup ?? nohup.find() ?? [])]
  try {
    session = await startInteractiveGemini({ pkgDir, sandbox, server, env, timeoutMs })
    await session.submit('Start the daemons.')
    pids.plain = await until(plain.find, "the first job's processes", timeoutMs / 3)
    pids.nohup = await until(nohup.find, "the second job's processes", timeoutMs / 3)
    await session.waitForScreen((s) => s.includes('Both running.') && idle(s), 'the end of the turn', { timeoutMs: timeoutMs / 4 })
    const cliPids = session.cliPids()
    let code
    let endedAt
    if (end === 'sigkill') {
      killPids(cliPids)
      endedAt = Date.now()
      code = await session.waitExit({ timeoutMs: 30_000 }).catch(() => undefined)
    } else {
      await session.quit()
      code = await session.waitExit({ timeoutMs: 60_000 })
      endedAt = Date.now()
    }
    const observed = await observeSurvivors(all(), endedAt, { observeMs })
    const alive = (list) => list.filter(isAlive).length
    const out = {
      end,
      code,
      cliProcesses: cliPids.length,
      plain: { processes: pids.plain.length, survivors: alive(pids.plain) },
      nohup: { processes: pids.nohup.length, survivors: alive(pids.nohup) },
      survivorsAtMs: observed.survivorsAtMs,
    }
    if (waitAllDeadMs > 0) {
      await until(() => all().every((p) => !isAlive(p)), 'the jobs to end', waitAllDeadMs)
        .then(() => (out.allDeadMs = Date.now() - endedAt))
        .catch(() => {})
    }
    return out
  } finally {
    killPids(all())
    await session?.kill()
    await server.close()
    sandbox.cleanup()
  }
}

/**
 * The terminal jobs of the interactive UI: the pty path (taskstream's terminal mode, patched) and its
 * two ways into the background, in one session:
 *  1. "Start the terminal job.": a background `run_shell_command` (is_background);
 *  2. "Run the foreground job.": a `run_shell_command` without it, which prints its ticks into the
 *     tool's box on screen; once `fg tick 3` shows, Ctrl+B moves it to the background (the UI:
 *     ExecutionLifecycleService.background);
 *  3. the model then calls `list_background_processes` and `read_background_output` for each job.
 * Each job runs `term.sh`: ignores SIGHUP and SIGTERM (as the sleep it double-forks does), prints
 * `TTY <name>` if its stdout is a terminal (else `NO-TTY <name>`), a coloured line, then a tick every
 * 200 ms. Read from /proc while both run: the leader (the shell Gemini starts) of each, its terminal
 * and taskstream's tag; read from Gemini's log path: each job's log. Then the CLI ends: `end`
 * 'ctrlc' (Ctrl+C twice, the way a user quits) or 'sigkill' (every node process of the CLI in the
 * pane). Returns, per job, its three processes (leader, script, double-forked sleep) alive
 * `observeMs` after the end, and with `waitAllDeadMs` when the last of the six was gone.
 */
export async function interactiveTerminalScenario({ pkgDir, end, env = {}, observeMs = 2000, waitAllDeadMs = 0, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox()
  const tag = String(1000 + Math.floor(Math.random() * 8999))
  fs.writeFileSync(
    path.join(sandbox.work, 'term.sh'),
    `trap '' HUP TERM\ntest -t 1 && echo "TTY $1" || echo "NO-TTY $1"\nprintf '\\033[32mgreen %s\\033[0m\\n' "$1"\n( sleep "$2" & )\ni=0; while [ $i -lt 3000 ]; do i=$((i+1)); echo "$1 tick $i"; sleep 0.2; done\n`,
  )
  const jobs = {
    bg: { sleep: `7${tag}1`, is_background: true },
    fg: { sleep: `7${tag}2`, is_background: false },
  }
  for (const [name, j] of Object.entries(jobs)) {
    j.command = `bash term.sh ${name} ${j.sleep}`
    j.find = () => [...pidsByArgv(['bash', 'term.sh', name, j.sleep]), ...pidsByArgv(['sleep', j.sleep])]
  }
  const pidIn = (r) => Number(/\(PID: (\d+)\)/.exec(r?.output ?? '')?.[1]) || undefined
  const results = (body, name) => turns(body).flatMap((t) => t.responses).filter((r) => r.name === name)
  const server = await startModelServer(
    scripted([
      [said('Start the terminal job.'), () => call('run_shell_command', { command: jobs.bg.command, description: 'terminal job', is_background: true })],
      [(last, body) => answered('run_shell_command')(last) && shellResults(body) === 1, () => ({ text: 'Started.' })],
      [said('Run the foreground job.'), () => call('run_shell_command', { command: jobs.fg.command, description: 'foreground job' })],
      [answered('run_shell_command'), () => call('list_background_processes', {})],
      [answered('list_background_processes'), (_last, body) => call('read_background_output', { pid: pidIn(results(body, 'run_shell_command')[0]), lines: 1000 })],
      [(last, body) => answered('read_background_output')(last) && results(body, 'read_background_output').length === 1, (_last, body) => call('read_background_output', { pid: pidIn(results(body, 'run_shell_command')[1]), lines: 1000 })],
      [answered('read_background_output'), () => ({ text: 'All read.' })],
    ]),
  )
  const logOf = (pid) => path.join(sandbox.home, '.gemini', 'tmp', 'background-processes', `background-${pid}.log`)
  let session
  const all = () => [...new Set([...Object.values(jobs).flatMap((j) => [...(j.pid && isAlive(j.pid) ? [j.pid] : []), ...j.find()])])]
  const r = { end, jobs: {} }
  try {
    session = await startInteractiveGemini({ pkgDir, sandbox, server, env, timeoutMs })
    await session.submit('Start the terminal job.')
    await session.waitForScreen((s) => s.includes('Started.') && idle(s), 'the terminal job to start', { timeoutMs: timeoutMs / 4 })
    await session.submit('Run the foreground job.')
    // Its output, live in the tool's box; then Ctrl+B.
    await session.waitForScreen((s) => /\bfg tick 3\b/.test(s), "the foreground job's ticks on screen", { timeoutMs: timeoutMs / 4 })
    await session.keys('C-b')
    await session.waitForScreen((s) => s.includes('All read.') && idle(s), 'the model to read both logs', { timeoutMs: timeoutMs / 4 })
    const shellOut = toolResultsOf(server.requests, 'run_shell_command')
    jobs.bg.pid = pidIn(shellOut[0])
    jobs.fg.pid = pidIn(shellOut[1])
    r.results = normalisedResults(server.requests, [jobs.bg.pid, jobs.fg.pid].filter(Boolean))
    for (const [name, j] of Object.entries(jobs)) {
      const processes = await until(() => (j.find().length === 2 ? j.find() : undefined), `the ${name} job's processes`, 30_000)
      j.processes = [j.pid, ...processes]
      const facts = procFacts(j.pid)
      let log
      try {
        log = fs.readFileSync(logOf(j.pid), 'utf8')
      } catch {}
      r.jobs[name] = {
        processes: j.processes.length,
        leader: { tty: facts?.tty, taskId: environOf(j.pid).TASKSTREAM_TASK_ID, cgroup: facts?.cgroup },
        // Every process of the job on a terminal (the script and its sleep inherit it).
        allOnTty: j.processes.every((pid) => procFacts(pid)?.tty),
        log: log === undefined ? undefined : { head: log.split('\n').slice(0, 3).join('\n'), ansi: log.includes('\x1b'), cr: log.includes('\r'), ticks: (log.match(/ tick \d+/g) ?? []).length },
      }
    }
    const pids = Object.values(jobs).flatMap((j) => j.processes)
    const cliPids = session.cliPids()
    let endedAt
    if (end === 'sigkill') {
      killPids(cliPids)
      endedAt = Date.now()
      r.code = await session.waitExit({ timeoutMs: 30_000 }).catch(() => undefined)
    } else {
      r.ctrlCAttempts = await session.doubleCtrlC()
      endedAt = Date.now()
      r.code = await session.waitExit({ timeoutMs: 60_000 })
    }
    const observed = await observeSurvivors(pids, endedAt, { observeMs, waitAllDeadMs })
    r.survivors = observed.survivors
    r.survivorsAtMs = observed.survivorsAtMs
    r.allDeadMs = observed.allDeadMs
    r.of = pids.length
    return r
  } finally {
    killPids(all())
    await session?.kill()
    await server.close()
    sandbox.cleanup()
  }
}

/** The results of tool `name` the model was sent, in order. */
const toolResultsOf = (requests, name) => normalisedResults(requests, []).filter((x) => x.name === name)

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The rows monitor updates take on screen (`screen` as `capture-pane` gives it, not joined): an item
 * starts with `ℹ Monitor "<description>" ` and goes on with the lines indented under it. Items are
 * counted once (by their first line) should the UI redraw its history. Returns
 * { items, rows, errorLines, text }.
 */
export function monitorScreenRows(screen, description) {
  const head = new RegExp(`^\\s*ℹ Monitor "${escapeRe(description)}" `)
  const seen = new Set()
  const items = []
  const lines = screen.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (!head.test(lines[i])) continue
    const item = [lines[i]]
    while (i + 1 < lines.length && /^ {2,}\S/.test(lines[i + 1]) && !head.test(lines[i + 1]) && !/^\s*[ℹ✦>│╭╰]/.test(lines[i + 1])) item.push(lines[++i])
    if (seen.has(item[0])) continue
    seen.add(item[0])
    items.push(item)
  }
  const text = items.map((it) => it.join('\n')).join('\n')
  return { items: items.length, rows: items.reduce((n, it) => n + it.length, 0), errorLines: errorLinesIn([text]), text }
}

/** The numbers of the chatty server's ERROR lines found in `texts`. */
export function errorLinesIn(texts) {
  const found = new Set()
  for (const t of texts) for (const m of t.matchAll(/ERROR request (\d+) failed/g)) found.add(Number(m[1]))
  return [...found].sort((a, b) => a - b)
}

/** The monitor updates the model was sent (the text inside <background_output>), over all requests, each once. */
export function modelUpdates(requests) {
  const seen = new Set()
  const out = []
  for (const body of requests) {
    for (const t of turns(body)) {
      if (t.role !== 'user') continue
      for (const m of t.text.matchAll(/Background monitor update:\n<background_output>\n([\s\S]*?)\n<\/background_output>/g)) {
        if (seen.has(m[1])) continue
        seen.add(m[1])
        out.push(m[1])
      }
    }
  }
  return out
}

/**
 * The monitor tool in the interactive UI: the model starts a monitor on the chatty dev server (2000
 * lines over ~4 s, 10 ERROR lines) and ends its turn; its updates then reach the model as they come.
 * Once the last one (the monitor's end) has reached the model and the UI is idle again, counts what
 * the model got (updates, bytes, ERROR lines) and what the screen shows (the monitor's rows). The
 * stock CLI offers no monitor tool: then the model says so and the scenario ends there.
 */
export async function interactiveMonitorScenario({ pkgDir, env = {}, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox()
  const description = 'dev server'
  const server = await startModelServer(
    scripted([
      [said('Watch the dev server.'), (_last, body) => (offeredTools(body).includes('monitor') ? call('monitor', { command: `bash ${CHATTY}`, description }) : { text: 'No monitor tool.' })],
      [answered('monitor'), () => ({ text: 'Watching the dev server.' })],
    ]),
  )
  let session
  const started = Date.now()
  try {
    session = await startInteractiveGemini({ pkgDir, sandbox, server, env, timeoutMs })
    const readyMs = Date.now() - started
    await session.submit('Watch the dev server.')
    const offered = await until(() => server.requests[0] && offeredTools(server.requests[0]), 'the first request', 30_000)
    if (!offered.includes('monitor')) {
      await session.waitForScreen((s) => s.includes('No monitor tool.') && idle(s), 'the answer', { timeoutMs: timeoutMs / 4 })
      return { offered, readyMs, updates: [], errorLines: [], modelBytes: 0 }
    }
    await server.waitFor((reqs) => modelUpdates(reqs).some((u) => /<status>(completed|failed|cancelled)<\/status>/.test(u)), timeoutMs / 2)
    const screen = await session.waitForScreen(
      (s) => new RegExp(`Monitor "${escapeRe(description)}" (completed|failed|cancelled)`).test(s) && idle(s),
      "the monitor's end on screen, the UI idle",
      { timeoutMs: timeoutMs / 4, history: true, join: false },
    )
    const updates = modelUpdates(server.requests)
    // How the updates went: each as a turn of its own (a request whose last turn is the update).
    const ownTurns = server.requests.filter((b) => /^Background monitor update:/.test(turns(b).at(-1)?.text ?? '')).length
    return {
      offered,
      readyMs,
      started: server.requests.flatMap((b) => turns(b).at(-1)?.responses ?? []).find((x) => x.name === 'monitor')?.output,
      updates,
      // Notifications that arrive while the model answers go over together, in one update.
      notifications: updates.reduce((n, u) => n + (u.match(/<task-notification>/g) ?? []).length, 0),
      ownTurns,
      requests: server.requests.length,
      errorLines: errorLinesIn(updates),
      modelBytes: updates.reduce((n, u) => n + Buffer.byteLength(u), 0),
      lastStatus: /<status>(\w+)<\/status>/.exec(updates.at(-1) ?? '')?.[1],
      screen: monitorScreenRows(screen, description),
      screenText: screen,
    }
  } finally {
    await session?.kill()
    await server.close()
    sandbox.cleanup()
  }
}
