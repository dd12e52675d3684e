// Headless scenarios against the real Gemini CLI, each run the same way on a stock and on a patched
// copy: the scripted model drives the CLI's own tools, and every wait is on a condition (a file,
// a process, a request), never on a fixed sleep.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { geminiHome, startGemini } from './gemini.mjs'
import { startModelServer, toolResults, turns } from './model-server.mjs'
import { cpuQuiet, cpuTicks, descendants, isAlive, killPids, observeSurvivors, peakRssKb, pidsByArgv, until } from './support.mjs'

/** `yes | head -c BYTES`, timed from inside (the integrations' shared fixture). */
export const FIREHOSE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'kit', 'fixtures', 'firehose.sh')

/** The tool results the model was sent, with every pid replaced by `<PID>` (pids differ per run). */
export function normalisedResults(requests, pids) {
  return toolResults(requests).map((r) => {
    let output = r.output
    for (const pid of pids) output = output.split(String(pid)).join('<PID>')
    return { name: r.name, output }
  })
}

/** The pid the CLI named in its answer to the background run_shell_command, or undefined. */
export function backgroundPid(requests) {
  for (const r of toolResults(requests)) {
    const m = r.name === 'run_shell_command' && /\(PID: (\d+)\)/.exec(r.output)
    if (m) return Number(m[1])
  }
  return undefined
}

/** The job of the transcript scenarios: it waits for a file `go`, then prints three lines (one coloured) and ends. */
export const TRANSCRIPT_JOB = `while [ ! -e go ]; do sleep 0.05; done; echo one; printf '\\033[32mtwo\\033[0m\\n'; echo three`

const lastTurnHasResultOf = (body, name) => turns(body).at(-1)?.responses.some((r) => r.name === name)

/**
 * The stock tools' model-facing texts, in one session: a background job that waits for a file,
 * `list_background_processes` while it runs, then (once the job has printed its three lines and
 * ended) `read_background_output`. Returns the normalised tool results and the job's pid.
 */
export async function transcriptScenario(t, pkgDir) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const go = path.join(work, 'go')
  const command = TRANSCRIPT_JOB
  let pid
  const server = await startModelServer(async (body) => {
    const ts = turns(body)
    if (ts.length === 1) {
      return { toolCalls: [{ name: 'run_shell_command', args: { command, description: 'a job that waits', is_background: true } }] }
    }
    if (lastTurnHasResultOf(body, 'run_shell_command')) {
      pid = backgroundPid([body])
      return { toolCalls: [{ name: 'list_background_processes', args: {} }] }
    }
    if (lastTurnHasResultOf(body, 'list_background_processes')) {
      fs.writeFileSync(go, '')
      const log = path.join(home, '.gemini', 'tmp', 'background-processes', `background-${pid}.log`)
      await until(() => !isAlive(pid) && fs.readFileSync(log, 'utf8').includes('three'), 'the job to print its lines and end', 60_000)
      return { toolCalls: [{ name: 'read_background_output', args: { pid } }] }
    }
    return { text: 'finished' }
  })
  t.after(() => server.close())
  const { done } = startGemini(pkgDir, { home, server, prompt: 'run the job', cwd: work })
  const r = await done
  return { run: r, pid, results: normalisedResults(server.requests, [pid]) }
}

/**
 * A background job that ignores SIGTERM (inherited by its sleeps), double-forks one sleep and keeps
 * another, both writing to files (so no SIGPIPE ends them by accident); the sleeps' numbers start
 * with `prefix` and are unique to this run. `find()` returns the two sleeps' pids once both run.
 * With `hup`, it ignores SIGHUP too, as `nohup` makes a job do (in the interactive UI a stock job
 * runs on a pty, whose hangup sends SIGHUP when the CLI ends).
 */
export function stubbornJob(prefix, { hup = false } = {}) {
  const tag = String(1000 + Math.floor(Math.random() * 8999))
  const [a, b] = ['1', '2'].map((d) => `${prefix}${tag}${d}`)
  const find = () => {
    const found = [a, b].map((n) => pidsByArgv(['sleep', n]))
    return found.every((p) => p.length === 1) ? found.flat() : undefined
  }
  return { command: `trap "" TERM${hup ? ' HUP' : ''}; ( sleep ${a} >> forked.txt 2>&1 & ); sleep ${b} >> kept.txt 2>&1`, find }
}

/**
 * Containment: a background job that ignores SIGTERM, double-forks one sleep and keeps another,
 * both writing to files (so no SIGPIPE ends them by accident). `end` is 'exit' (the model ends the
 * session, the CLI exits normally) or 'sigkill' (the CLI is SIGKILLed while the job runs). Returns
 * how many of the job's processes are alive 2 s after the CLI ended (`survivors`), and with `waitAllDeadMs`
 * when the last one was gone (`allDeadMs`). Survivors are killed (by pid) before it returns.
 */
export async function containmentScenario(t, pkgDir, end, { waitAllDeadMs = 15_000 } = {}) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const { command, find } = stubbornJob('7')
  let running
  const started = new Promise((resolve) => (running = resolve))
  const server = await startModelServer(async (body) => {
    const ts = turns(body)
    if (ts.length === 1) {
      return { toolCalls: [{ name: 'run_shell_command', args: { command, description: 'a stubborn job', is_background: true } }] }
    }
    const pids = await until(find, 'the job processes', 60_000)
    running(pids)
    if (end === 'sigkill') return new Promise(() => {}) // held until the CLI is killed
    return { text: 'finished' }
  })
  t.after(() => server.close())
  const { child, done } = startGemini(pkgDir, { home, server, prompt: 'run the job', cwd: work })
  let pids
  try {
    pids = await Promise.race([started, done.then((r) => Promise.reject(new Error(`the CLI ended first: ${r.code} ${r.stderr.slice(-2000)}`)))])
    if (end === 'sigkill') process.kill(child.pid, 'SIGKILL')
    await done
    const endedAt = Date.now()
    const observed = await observeSurvivors(pids, endedAt, { observeMs: 2000, waitAllDeadMs })
    return { ...observed, processes: pids.length }
  } finally {
    killPids(pids ?? find() ?? [])
  }
}

/** The names of the function declarations the CLI offered the model in its first request. */
export function offeredTools(body) {
  return (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name))
}

/**
 * stop_background_process: a job that ignores SIGTERM and double-forks is started, then stopped by
 * the model; when the next request arrives (the stop's answer in it) the job's processes are
 * counted; then list_background_processes, a second stop, and a stop of a pid not in the session.
 * Returns the tool results (pids normalised), the processes alive when the stop had answered, and
 * the tools offered to the model.
 */
export async function stopScenario(t, pkgDir) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const { command, find } = stubbornJob('8')
  let pid
  let jobPids = []
  let aliveAfterStop
  const server = await startModelServer(async (body) => {
    const ts = turns(body)
    if (ts.length === 1) {
      return { toolCalls: [{ name: 'run_shell_command', args: { command, description: 'a stubborn job', is_background: true } }] }
    }
    if (lastTurnHasResultOf(body, 'run_shell_command')) {
      pid = backgroundPid([body])
      jobPids = await until(find, 'the job processes', 60_000)
      return { toolCalls: [{ name: 'stop_background_process', args: { pid } }] }
    }
    const stops = ts.at(-1)?.responses.filter((r) => r.name === 'stop_background_process').length ?? 0
    if (stops && aliveAfterStop === undefined) {
      aliveAfterStop = jobPids.filter(isAlive).length
      return { toolCalls: [{ name: 'list_background_processes', args: {} }] }
    }
    if (lastTurnHasResultOf(body, 'list_background_processes')) {
      return { toolCalls: [{ name: 'stop_background_process', args: { pid } }] }
    }
    if (toolResults([body]).filter((r) => r.name === 'stop_background_process').length === 2) {
      return { toolCalls: [{ name: 'stop_background_process', args: { pid: process.pid } }] }
    }
    return { text: 'finished' }
  })
  t.after(() => server.close())
  try {
    const { done } = startGemini(pkgDir, { home, server, prompt: 'run and stop the job', cwd: work })
    const run = await done
    return {
      run,
      aliveAfterStop,
      processes: jobPids.length,
      offered: offeredTools(server.requests[0] ?? {}),
      results: normalisedResults(server.requests, [pid, process.pid]),
    }
  } finally {
    killPids(jobPids)
  }
}

/**
 * The firehose as a background job: `yes | head -c BYTES` (200 MB). A foreground `echo` first, so
 * that the CLI's one-off work for its first shell command (its shell parser) is behind the window;
 * then the CLI's CPU time is read, the firehose starts in the background, and once the producer
 * has finished and the CLI's CPU has been still for 300 ms it is read again. Returns the CLI's
 * CPU time over the window (`cliCpuMs`, all its threads: taskstream's too), the producer's own
 * throughput (`producerMBps`) and the CLI's peak RSS (`peakRssMB`). Linux.
 */
export async function firehoseScenario(t, pkgDir, { bytes = 200_000_000, clkTck = 100, timeoutMs = 300_000 } = {}) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const doneFile = path.join(work, 'firehose.done')
  let cliPid
  const m = {}
  const server = await startModelServer(async (body) => {
    const last = turns(body).at(-1)
    if (turns(body).length === 1) return { toolCalls: [{ name: 'run_shell_command', args: { command: 'echo warm', description: 'warm up' } }] }
    if (last.responses.some((r) => r.name === 'run_shell_command') && m.cpuBefore === undefined) {
      m.cpuBefore = cpuTicks(cliPid)
      return {
        toolCalls: [
          {
            name: 'run_shell_command',
            args: { command: `FIREHOSE_BYTES=${bytes} bash ${FIREHOSE} ${doneFile}`, description: 'firehose', is_background: true },
          },
        ],
      }
    }
    if (m.cpuAfter === undefined) {
      const [size, ns] = (await until(() => fs.readFileSync(doneFile, 'utf8').trim(), 'the firehose to finish', timeoutMs)).split(' ').map(Number)
      await cpuQuiet([cliPid], "the CLI's CPU to settle", timeoutMs, 3)
      m.cpuAfter = cpuTicks(cliPid)
      m.peakRssKb = peakRssKb(cliPid)
      m.producerMBps = size / 1e6 / (ns / 1e9)
    }
    return { text: 'finished' }
  }, { replyTimeoutMs: timeoutMs })
  t.after(() => server.close())
  const { child, done } = startGemini(pkgDir, { home, server, prompt: 'run the firehose', cwd: work, timeoutMs })
  cliPid = child.pid
  const run = await done
  if (m.cpuAfter === undefined) throw new Error(`the firehose scenario did not finish: ${run.code} ${run.stderr.slice(-2000)}`)
  return { run, cliCpuMs: ((m.cpuAfter - m.cpuBefore) * 1000) / clkTck, producerMBps: m.producerMBps, peakRssMB: m.peakRssKb / 1024 }
}

/** The chatty dev server of the repository's benches: 2000 INFO lines and 10 ERROR lines in ~4 s. */
export const CHATTY = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bench', 'fixtures', 'chatty-server.sh')

/** The monitor updates the model got (the text inside <background_output>), in order. */
export function monitorUpdates(requests) {
  const updates = []
  for (const body of requests) {
    const m = /^Background monitor update:\n<background_output>\n([\s\S]*)\n<\/background_output>/.exec(turns(body).at(-1)?.text ?? '')
    if (m) updates.push(m[1])
  }
  return updates
}

/**
 * The monitor tool headless: the model starts a monitor on the chatty dev server and ends its
 * turn at once; every monitor update then arrives as a turn of its own until the monitor ends.
 * Returns the updates (the text inside <background_output>), the numbers of the ERROR lines found
 * in them, their bytes, and whether the last one says the monitor completed.
 */
export async function monitorScenario(t, pkgDir) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const server = await startModelServer((body) => {
    if (turns(body).length === 1) {
      return { toolCalls: [{ name: 'monitor', args: { command: `bash ${CHATTY}`, description: 'dev server' } }] }
    }
    return { text: 'noted' }
  })
  t.after(() => server.close())
  const { done } = startGemini(pkgDir, { home, server, prompt: 'start the dev server and watch it', cwd: work })
  const run = await done
  const updates = monitorUpdates(server.requests)
  const errorLines = new Set()
  for (const u of updates) for (const m of u.matchAll(/ERROR request (\d+) failed/g)) errorLines.add(Number(m[1]))
  return {
    run,
    offered: offeredTools(server.requests[0] ?? {}),
    started: toolResults(server.requests).find((r) => r.name === 'monitor')?.output,
    updates,
    errorLines: [...errorLines].sort((a, b) => a - b),
    updateBytes: updates.reduce((n, u) => n + Buffer.byteLength(u), 0),
    completed: /<status>completed<\/status>/.test(updates.at(-1) ?? ''),
  }
}

/**
 * Persisted jobs (TASKSTREAM_GEMINI_PERSIST=1): session 1 starts a background job and is SIGKILLed
 * while it runs; session 2 (the same HOME) lists it, reads its log, stops it and lists it again.
 * Returns session 2's tool results (pids normalised), whether the job ran between the sessions,
 * and the job's processes alive after session 2 ended.
 */
export async function persistScenario(t, pkgDir) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const env = { TASKSTREAM_GEMINI_PERSIST: '1' }
  const tag = `9${String(1000 + Math.floor(Math.random() * 8999))}3`
  const command = `echo persisted-one; sleep ${tag} >> kept.txt 2>&1`
  const find = () => pidsByArgv(['sleep', tag])
  let pid
  let running
  const started = new Promise((resolve) => (running = resolve))
  try {
    const first = await startModelServer(async (body) => {
      if (turns(body).length === 1) {
        return { toolCalls: [{ name: 'run_shell_command', args: { command, description: 'a long job', is_background: true } }] }
      }
      pid = backgroundPid([body])
      await until(() => find().length === 1, 'the job to run', 60_000)
      running()
      return new Promise(() => {}) // held until the CLI is killed
    })
    t.after(() => first.close())
    const one = startGemini(pkgDir, { home, server: first, prompt: 'start the job', cwd: work, env })
    await Promise.race([started, one.done.then((r) => Promise.reject(new Error(`session 1 ended first: ${r.code} ${r.stderr.slice(-2000)}`)))])
    process.kill(one.child.pid, 'SIGKILL')
    await one.done
    const ranBetween = find().length === 1

    const second = await startModelServer((body) => {
      const ts = turns(body)
      const calls = [
        { name: 'list_background_processes', args: {} },
        { name: 'read_background_output', args: { pid } },
        { name: 'stop_background_process', args: { pid } },
        { name: 'list_background_processes', args: {} },
      ]
      const answered = ts.filter((x) => x.responses.length > 0).length
      return answered < calls.length ? { toolCalls: [calls[answered]] } : { text: 'finished' }
    })
    t.after(() => second.close())
    const two = startGemini(pkgDir, { home, server: second, prompt: 'what is running?', cwd: work, env })
    const run = await two.done
    return { run, ranBetween, aliveAfter: find().length, results: normalisedResults(second.requests, [pid]) }
  } finally {
    killPids(find())
  }
}

/** A number unique to this run, to find a scenario's `sleep` processes by their argv. */
const uniqueTag = (lead) => `${lead}${String(1000 + Math.floor(Math.random() * 8999))}${process.pid % 10}`

/**
 * Task control from the environment, the deadline (run with TASKSTREAM_GEMINI_TIMEOUT in `env`): a
 * background `sleep` and then a monitor on another `sleep`, both of days, far past the deadline. The
 * model lists the background jobs once the job's process has ended (again while the list still
 * says RUNNING), then starts the monitor and ends its turn; the monitor's updates come as turns
 * of their own until it has ended. Returns when the job's process was gone (`goneMs`, from the
 * model's tool call), whether it was running when the tool answered, the tool results (pids
 * normalised), the lists it took, and the monitor's updates.
 */
export async function deadlineScenario(t, pkgDir, env) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const jobTag = uniqueTag('6')
  const watcherTag = uniqueTag('3')
  const findJob = () => pidsByArgv(['sleep', jobTag])
  const findWatcher = () => pidsByArgv(['sleep', watcherTag])
  const m = { lists: 0 }
  const server = await startModelServer(async (body) => {
    const ts = turns(body)
    const last = ts.at(-1)
    if (ts.length === 1) {
      m.calledAt = Date.now()
      return { toolCalls: [{ name: 'run_shell_command', args: { command: `sleep ${jobTag}`, description: 'a long job', is_background: true } }] }
    }
    if (lastTurnHasResultOf(body, 'run_shell_command')) {
      m.pid = backgroundPid([body])
      if (m.pid === undefined) return { text: 'finished' } // not started: the results say why
      m.runningWhenAnswered = findJob().length === 1
      await until(() => findJob().length === 0, 'the job to end by its deadline', 60_000, 20)
      m.goneMs = Date.now() - m.calledAt
      return { toolCalls: [{ name: 'list_background_processes', args: {} }] }
    }
    if (lastTurnHasResultOf(body, 'list_background_processes')) {
      m.lists++
      const listed = last.responses.find((r) => r.name === 'list_background_processes').output
      // The history is marked when taskstream reports the end, a moment after the process is gone.
      if (/RUNNING/.test(listed) && m.lists < 50) return { toolCalls: [{ name: 'list_background_processes', args: {} }] }
      return { toolCalls: [{ name: 'monitor', args: { command: `sleep ${watcherTag}`, description: 'slow watcher' } }] }
    }
    if (lastTurnHasResultOf(body, 'monitor')) {
      // The tool answers as soon as the monitor's shell is spawned; its `sleep` may start a moment
      // after the answer reaches the model (a race the tool does not wait for): waited for, well
      // within the deadline.
      const answeredAt = Date.now()
      m.watcherRunning = await until(() => findWatcher().length === 1, "the monitor's process", 1000, 5).then(
        () => true,
        () => false,
      )
      m.watcherSeenMs = Date.now() - answeredAt
      return { text: 'watching' }
    }
    return { text: 'noted' }
  })
  t.after(() => server.close())
  try {
    const { done } = startGemini(pkgDir, { home, server, prompt: 'start the job and the watcher', cwd: work, env })
    const run = await done
    return {
      run,
      goneMs: m.goneMs,
      runningWhenAnswered: m.runningWhenAnswered,
      watcherRunning: m.watcherRunning,
      watcherSeenMs: m.watcherSeenMs,
      watcherAlive: findWatcher().length,
      lists: m.lists,
      results: normalisedResults(server.requests, [m.pid]),
      updates: monitorUpdates(server.requests),
    }
  } finally {
    killPids([...findJob(), ...findWatcher()])
  }
}

/**
 * Task control from the environment, the process limit (run with TASKSTREAM_GEMINI_MAX_PROCESSES
 * in `env`, or stock): a background job that starts `children` sleeps and waits. The processes are
 * counted every 20 ms until either all `children` run or the job's log shows bash failing to fork
 * twice (its first failure, then its retry a second later, both past the limit); the most seen at
 * once are `maxChildren` (the sleeps) and `maxTree` (every process under the job's pid: its shell,
 * the subshell Gemini wraps every command in, the sleeps). Then the patched CLI's model stops the job (stop_background_process) and
 * the processes left are counted (`aliveAfterStop`); stock has no such tool, the job is killed by
 * pid. Returns those numbers, the fork failures in the log, and the tool results.
 */
export async function processLimitScenario(t, pkgDir, env, { children = 30 } = {}) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const tag = uniqueTag('5')
  const find = () => pidsByArgv(['sleep', tag])
  const forkFailures = (log) => (log.match(/Resource temporarily unavailable/g) ?? []).length
  const m = { maxChildren: 0, maxTree: 0 }
  const server = await startModelServer(async (body) => {
    const ts = turns(body)
    if (ts.length === 1) {
      const command = `for i in {1..${children}}; do sleep ${tag} & done; wait`
      return { toolCalls: [{ name: 'run_shell_command', args: { command, description: 'a forking job', is_background: true } }] }
    }
    if (lastTurnHasResultOf(body, 'run_shell_command')) {
      m.pid = backgroundPid([body])
      if (m.pid === undefined) return { text: 'finished' } // not started: the results say why
      const logPath = path.join(home, '.gemini', 'tmp', 'background-processes', `background-${m.pid}.log`)
      const log = () => {
        try {
          return fs.readFileSync(logPath, 'utf8')
        } catch {
          return ''
        }
      }
      await until(() => {
        m.maxChildren = Math.max(m.maxChildren, find().length)
        m.maxTree = Math.max(m.maxTree, descendants(m.pid).filter(isAlive).length)
        return m.maxChildren === children || forkFailures(log()) >= 2
      }, 'all children, or two fork failures', 90_000, 20)
      m.forkFailures = forkFailures(log())
      m.logTail = log().split('\n').slice(-3).join('\n')
      if (offeredTools(server.requests[0] ?? {}).includes('stop_background_process')) {
        return { toolCalls: [{ name: 'stop_background_process', args: { pid: m.pid } }] }
      }
      return { text: 'finished' }
    }
    if (lastTurnHasResultOf(body, 'stop_background_process')) m.aliveAfterStop = find().length
    return { text: 'finished' }
  })
  t.after(() => server.close())
  try {
    const { done } = startGemini(pkgDir, { home, server, prompt: 'run the forking job', cwd: work, env })
    const run = await done
    return { run, ...m, results: normalisedResults(server.requests, [m.pid]) }
  } finally {
    killPids([...find(), ...(m.pid ? [m.pid] : [])])
  }
}

/**
 * Task control from the environment, bad values (run with them in `env`): the model starts a
 * background `sleep` and a monitor on another; returns the tool results, how many of those
 * sleeps ran, and the run (its stderr).
 */
export async function badTaskControlScenario(t, pkgDir, env) {
  const home = geminiHome(t)
  const work = fs.mkdtempSync(path.join(home, 'work-'))
  const tag = uniqueTag('4')
  const find = () => pidsByArgv(['sleep', tag])
  let ran = 0
  const server = await startModelServer(async (body) => {
    const ts = turns(body)
    if (ts.length === 1) {
      return { toolCalls: [{ name: 'run_shell_command', args: { command: `sleep ${tag}`, description: 'a long job', is_background: true } }] }
    }
    if (lastTurnHasResultOf(body, 'run_shell_command')) {
      ran += find().length
      return { toolCalls: [{ name: 'monitor', args: { command: `sleep ${tag}`, description: 'a watcher' } }] }
    }
    if (lastTurnHasResultOf(body, 'monitor')) ran += find().length
    return { text: 'finished' }
  })
  t.after(() => server.close())
  try {
    const { done } = startGemini(pkgDir, { home, server, prompt: 'start the job and the watcher', cwd: work, env })
    const run = await done
    return { run, ran, results: toolResults(server.requests) }
  } finally {
    killPids(find())
  }
}
