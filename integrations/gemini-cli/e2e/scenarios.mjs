// Headless scenarios against the real Gemini CLI, each run the same way on a stock and on a patched
// copy: the scripted model drives the CLI's own tools, and every wait is on a condition (a file,
// a process, a request), never on a fixed sleep.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { geminiHome, startGemini } from './gemini.mjs'
import { startModelServer, toolResults, turns } from './model-server.mjs'
import { cpuQuiet, cpuTicks, isAlive, killPids, observeSurvivors, peakRssKb, pidsByArgv, until } from './support.mjs'

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
  const updates = []
  for (const body of server.requests) {
    const m = /^Background monitor update:\n<background_output>\n([\s\S]*)\n<\/background_output>/.exec(turns(body).at(-1)?.text ?? '')
    if (m) updates.push(m[1])
  }
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
