// Scenarios against the real CLI in its interactive mode (in tmux, see interactive.mjs), shared by
// test/interactive.test.mjs and the benchmark. The scripted model answers by what it is asked (the
// last message of each request), not by the request's number, since interactive mode can send
// requests of its own; notifications reach it as user messages holding <task-notification> blocks,
// each delivery a turn of its own, answered with "Noted.".
import fs from 'node:fs'
import path from 'node:path'

import { startInteractive } from './interactive.mjs'
import { messageTexts, startModelServer } from './model-server.mjs'
import { makeSandbox } from './qwen.mjs'
import { CHATTY, chattyErrorLines, modelNotifications, parseShellStarted } from './scenarios.mjs'
import { containmentTasks, isAlive, killPids, observeSurvivors, pidsByArgv, pidsWhere, pidsWithEnv, until } from './support.mjs'

/** Requests the CLI sends on its own (follow-up suggestions, managed memory), if settings let them through. */
export function isSideRequest(body) {
  const last = messageTexts(body).at(-1)
  return last?.role === 'user' && /^\s*(\[SUGGESTION MODE|Managed memory has)/.test(last.text)
}

/**
 * A scripted model for one prompt: it answers the prompt and each tool result with the next of
 * `calls` (one tool call each, counted by the tool results in the conversation), then `finalText`;
 * anything else (a notification's turn, a request of the CLI's own) with "Noted.".
 */
function scriptedModel(prompt, calls, finalText) {
  return async (body) => {
    const msgs = messageTexts(body)
    const last = msgs.at(-1)
    if (isSideRequest(body)) return { text: 'Noted.' }
    const answering = last?.role === 'tool' || (last?.role === 'user' && last.text.includes(prompt))
    if (!answering) return { text: 'Noted.' }
    const done = msgs.filter((m) => m.role === 'tool').length
    return done < calls.length ? { toolCalls: [calls[done]] } : { text: finalText }
  }
}

const monitorCall = (command, description) => ({ name: 'tool_call', arguments: { name: 'monitor', arguments: { command, description } } })
const searchMonitor = { name: 'tool_search', arguments: { query: 'select:monitor' } }
const shellCall = (command, description) => ({ name: 'run_shell_command', arguments: { command, is_background: true, description } })

/** The tool results of a request's conversation that start with `prefix`. */
const toolResults = (requests, prefix) => {
  const out = []
  for (const body of requests) for (const m of messageTexts(body)) if (m.role === 'tool' && m.text.startsWith(prefix) && !out.includes(m.text)) out.push(m.text)
  return out
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The rows a monitor's notifications take on screen (`screen` as `capture-pane` gives it, not
 * joined): an item starts with `  ● Monitor "<description>" event #…`, `events #…–…:`,
 * `completed.`, …, and goes on with the lines indented by four spaces under it. Items are
 * counted once (by their first line) should the CLI redraw its history. Returns
 * { items, rows, errorLines, text }.
 */
export function monitorScreenRows(screen, description) {
  const head = new RegExp(`^ {2}\\S{1,3} Monitor "${escapeRe(description)}" `)
  const seen = new Set()
  const items = []
  const lines = screen.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (!head.test(lines[i])) continue
    const item = [lines[i]]
    while (i + 1 < lines.length && /^ {4}\S/.test(lines[i + 1]) && !head.test(lines[i + 1])) item.push(lines[++i])
    if (seen.has(item[0])) continue
    seen.add(item[0])
    items.push(item)
  }
  const text = items.map((it) => it.join('\n')).join('\n')
  return { items: items.length, rows: items.reduce((n, it) => n + it.length, 0), errorLines: chattyErrorLines([text]), text }
}

/** Whether the CLI is idle on screen: its input prompt shows and no response is running. */
const idle = (s) => /Type your message/.test(s) && !/esc to cancel/.test(s)

/**
 * The chatty dev server (the headless chattyScenario's: 2000 lines over 4 s, 10 ERROR lines) watched
 * with the monitor tool in the interactive CLI. The model starts the monitor and ends its turn; the
 * notifications then reach it as they come. Once the monitor's completion has reached the model and
 * shows on screen, counts the monitor's rows on screen and what the model received.
 */
export async function interactiveChattyScenario({ qwenDir, env = {}, cols = 200, rows = 50, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox('tsq-int-')
  const doneFile = path.join(sandbox.root, 'chatty.done')
  const command = `CHATTY_DONE_FILE=${doneFile} bash ${CHATTY}`
  const description = 'chatty dev server'
  const prompt = 'Start the dev server and watch it for errors.'
  const server = await startModelServer(scriptedModel(prompt, [searchMonitor, monitorCall(command, description)], 'Watching the dev server.'))
  let session
  const started = Date.now()
  try {
    session = await startInteractive({ qwenDir, sandbox, modelUrl: server.url, env, cols, rows, timeoutMs })
    const readyMs = Date.now() - started
    await session.submit(prompt)
    const monitorStarted = await until(() => toolResults(server.requests, 'Monitor started.')[0], 'the monitor to start', timeoutMs / 2)
    const id = /^id: (mon_\w+)$/m.exec(monitorStarted)?.[1]
    const completed = (b) => b.includes(`<task-id>${id}</task-id>`) && /<status>(completed|failed|cancelled)<\/status>/.test(b)
    await server.waitFor((reqs) => modelNotifications(reqs).some(completed), timeoutMs / 2)
    // The completion on screen, and the CLI done answering it.
    await session.waitForScreen(
      (s) => new RegExp(`Monitor "${escapeRe(description)}" (completed|failed|cancelled)`).test(s) && idle(s),
      "the monitor's completion on screen",
      { timeoutMs: timeoutMs / 4, history: true },
    )
    const screen = await session.capture({ history: true })
    const blocks = modelNotifications(server.requests).filter((b) => b.includes(`<task-id>${id}</task-id>`))
    return {
      monitorId: id,
      monitorStarted,
      readyMs,
      cols,
      requests: server.requests.length,
      blocks,
      notifications: blocks.length,
      modelBytes: blocks.reduce((n, b) => n + Buffer.byteLength(b), 0),
      errorLines: chattyErrorLines(blocks),
      lastStatus: /<status>(\w+)<\/status>/.exec(blocks.at(-1) ?? '')?.[1],
      screen: monitorScreenRows(screen, description),
      screenText: screen,
    }
  } finally {
    await session?.kill()
    await server.close()
    sandbox.cleanup()
  }
}

const MARK = 'TSQ_INTERACTIVE_TASK'

/**
 * The live processes of one run's tasks: `TSQ_INTERACTIVE_TASK=<tag>` in their environment (what
 * the shells start) or in their command line (the shells' own bash, whose environment predates
 * the `export`). The tag is unique to the run, so these are ours only.
 */
function markedPids(tag) {
  const marker = `${MARK}=${tag}`
  return [...new Set([...pidsWithEnv(MARK, tag), ...pidsWhere((argv) => argv.some((a) => a.includes(marker)))])]
}

/** Ends every process of the run's tasks (a shell may fork between the listing and the kill: so again, until none is left). */
async function killMarked(tag) {
  for (let i = 0; i < 20; i++) {
    const pids = markedPids(tag)
    if (pids.length === 0) return
    killPids(pids)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * Background shells and a monitor in one interactive session:
 *  - a shell ignoring SIGTERM with a background child (`trap "" TERM; sleep A & sleep B`), a shell
 *    appending to a file every 200 ms, a short shell that completes at once, and a monitor
 *    (`echo ready; exec sleep C`), every process of them marked by `TSQ_INTERACTIVE_TASK=<tag>` in
 *    its environment or command line, and the long-lived ones by numbers unique to the run;
 *  - the short shell's completion notification reaching the model;
 *  - `/tasks` typed once the CLI is idle: the listing on screen;
 *  - two Ctrl+C: the CLI quits; the task processes alive `observeMs` after its processes ended
 *    (and, with `waitAllDeadMs`, when the last one ended), and whether the file still grows.
 */
export async function interactiveTasksScenario({ qwenDir, env = {}, observeMs = 2000, waitAllDeadMs = 0, cols = 200, rows = 50, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox('tsq-int-')
  const tag = String(1000 + Math.floor(Math.random() * 8999))
  const [a, b, c] = ['1', '2', '3'].map((d) => `7${tag}${d}`)
  const file = path.join(sandbox.root, 'writer.log')
  const mark = `export ${MARK}=${tag}; `
  const commands = {
    daemon: `${mark}trap "" TERM; sleep ${a} & sleep ${b}`,
    writer: `${mark}while :; do date +%s%N >> ${file}; sleep 0.2; done`,
    short: `${mark}echo short-${tag} done`,
    monitor: `${mark}echo ready; exec sleep ${c}`,
  }
  const prompt = 'Start the jobs.'
  const calls = [
    shellCall(commands.daemon, 'daemon ignoring SIGTERM'),
    shellCall(commands.writer, 'log writer'),
    shellCall(commands.short, 'short job'),
    searchMonitor,
    monitorCall(commands.monitor, 'sleeper'),
  ]
  const server = await startModelServer(scriptedModel(prompt, calls, 'Jobs started.'))
  // The long-lived task processes: the daemon's bash and sleeps, the writer's bash, the monitor's sleep.
  const findTasks = () => {
    const sleeps = [a, b, c].map((n) => pidsByArgv(['sleep', n]))
    // taskstream's bash runs a cgroup step before the command, so match the end of the script.
    const bash = (cmd) => pidsWhere((argv) => argv.length === 3 && /(^|\/)bash$/.test(argv[0]) && argv[1] === '-c' && argv[2].endsWith(cmd))
    const shells = [bash(commands.daemon), bash(commands.writer)]
    return [...sleeps, ...shells].every((p) => p.length === 1) ? [...sleeps, ...shells].flat() : undefined
  }
  let session
  const r = {}
  try {
    session = await startInteractive({ qwenDir, sandbox, modelUrl: server.url, env, cols, rows, timeoutMs })
    await session.submit(prompt)
    const shellTexts = await until(() => {
      const t = toolResults(server.requests, 'Background shell started.')
      return t.length >= 3 ? t : undefined
    }, 'the three background shells', timeoutMs / 3)
    // In the order the model called them.
    const [daemon, writer, short] = shellTexts.map((t) => parseShellStarted(t).id)
    r.ids = { daemon, writer, short }
    const monitorStarted = await until(() => toolResults(server.requests, 'Monitor started.')[0], 'the monitor to start', timeoutMs / 3)
    r.ids.monitor = /^id: (mon_\w+)$/m.exec(monitorStarted)?.[1]
    r.taskPids = await until(findTasks, 'the task processes', timeoutMs / 3)

    // 2. The short shell's completion reaches the model (and the monitor's first event, so that no
    // notification is left to answer).
    const shortDone = (blocks) => blocks.find((x) => x.includes(`<task-id>${r.ids.short}</task-id>`) && /<status>completed<\/status>/.test(x))
    await server
      .waitFor((reqs) => shortDone(modelNotifications(reqs)) && modelNotifications(reqs).some((x) => x.includes(`<task-id>${r.ids.monitor}</task-id>`)), 30_000)
      .catch(() => {})
    r.shortCompletion = shortDone(modelNotifications(server.requests))
    r.notifications = modelNotifications(server.requests)

    // 3. /tasks, once the CLI is idle.
    // (Whether the completion shows on screen too is reported, not required.)
    r.shortCompletionOnScreen = await session
      .waitForScreen(/Background shell ".*short-\d+ done" completed/, "the short shell's completion on screen", { timeoutMs: 10_000, history: true })
      .then(() => true, () => false)
    await session.waitForScreen(idle, 'the CLI to be idle', { timeoutMs: timeoutMs / 4 })
    await session.submit('/tasks')
    const ids = [r.ids.daemon, r.ids.writer, r.ids.monitor, r.ids.short]
    const listing = await session.waitForScreen(
      (s) => /Background tasks \(\d+ total\)/.test(s) && ids.every((id) => s.includes(`[${id}]`)),
      'the /tasks listing',
      { timeoutMs: 30_000, history: true, join: true },
    )
    const from = listing.lastIndexOf('> /tasks')
    r.tasksText = listing.slice(from)
    r.tasks = Object.fromEntries([...r.tasksText.matchAll(/\[((?:bg|mon)_\w+)\] (\w+)/g)].map((m) => [m[1], m[2]]))

    // 4. Two Ctrl+C with the tasks running.
    r.aliveBeforeQuit = r.taskPids.filter(isAlive).length
    const quitAt = Date.now()
    r.ctrlCAttempts = await session.doubleCtrlC()
    r.code = await session.waitExit({ timeoutMs: 60_000 })
    const endedAt = Date.now()
    r.quitMs = endedAt - quitAt
    const size = () => {
      try {
        return fs.statSync(file).size
      } catch {
        return 0
      }
    }
    const sizeAtExit = size()
    Object.assign(r, await observeSurvivors(r.taskPids, endedAt, { observeMs, waitAllDeadMs }))
    // Growth over the observation (at least 600 ms, three of the writer's periods).
    await until(() => Date.now() - endedAt >= 600, 'the observation window', 5_000)
    r.fileGrewAfterExit = size() > sizeAtExit
    r.markedAlive = markedPids(tag).length
    return r
  } finally {
    killPids(r.taskPids ?? [])
    await session?.kill()
    await killMarked(tag)
    await server.close()
    sandbox.cleanup()
  }
}

/**
 * Containment in the interactive CLI: the headless containmentScenario's tasks (a background
 * shell `trap "" TERM; sleep A & sleep B`, a monitor `sleep C`); once the four task processes run
 * and the CLI is idle, every node process of the CLI in the pane (the pane's node descendants) is
 * SIGKILLed at once. The terminal stays open (the pane's shell waits), as when a CLI is killed
 * under a user's shell. Returns the task processes alive `observeMs` later, and (with
 * `waitAllDeadMs`) when the last one ended.
 */
export async function interactiveKillScenario({ qwenDir, env = {}, observeMs = 2000, waitAllDeadMs = 0, cols = 200, rows = 50, timeoutMs = 150_000 }) {
  const sandbox = makeSandbox('tsq-int-')
  const tasks = containmentTasks()
  const prompt = 'Start the daemon and the sleeper.'
  const server = await startModelServer(
    scriptedModel(prompt, [shellCall(tasks.shellCommand, 'daemon'), searchMonitor, monitorCall(tasks.monitorCommand, 'sleeper')], 'Leaving them running.'),
  )
  let session
  let taskPids = []
  try {
    session = await startInteractive({ qwenDir, sandbox, modelUrl: server.url, env, cols, rows, timeoutMs })
    await session.submit(prompt)
    taskPids = await until(tasks.find, 'the task processes', timeoutMs / 3)
    await session.waitForScreen((s) => s.includes('Leaving them running.') && idle(s), 'the end of the turn', { timeoutMs: timeoutMs / 4, history: true })
    const cliPids = session.cliPids()
    killPids(cliPids)
    const endedAt = Date.now()
    const observed = await observeSurvivors(taskPids, endedAt, { observeMs, waitAllDeadMs })
    const code = await session.waitExit({ timeoutMs: 30_000 }).catch(() => undefined)
    return { taskPids, cliProcesses: cliPids.length, code, ...observed }
  } finally {
    killPids(taskPids)
    await session?.kill()
    await server.close()
    sandbox.cleanup()
  }
}
