// End-to-end scenarios against the real CLI, shared by the tests and the benchmark.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { messageTexts, startModelServer } from './model-server.mjs'
import { makeSandbox, startQwen, waitForFile } from './qwen.mjs'
import { childrenOf, containmentTasks, cpuQuiet, cpuTicks, peakRssKb, environOf, isAlive, killPids, nodeDescendants, observeSurvivors, pidsByArgv, pidsWhere, until } from './support.mjs'

// Moved to support.mjs (shared with the interactive scenarios); still exported from here.
export { environOf, isAlive, pidsByArgv, pidsWhere, until }

const here = path.dirname(fileURLToPath(import.meta.url))
// The same dev server bench/signal.mjs measures.
export const CHATTY = path.join(here, '..', '..', '..', 'bench', 'fixtures', 'chatty-server.sh')

const lastMessage = (body) => {
  const msgs = messageTexts(body)
  return msgs[msgs.length - 1]
}

/** What headless mode shows of task state: the task_started and task_notification system events of its stream-json output. */
export function taskEventsOf(result) {
  return result.events
    .filter((e) => e.type === 'system' && (e.subtype === 'task_started' || e.subtype === 'task_notification'))
    .map((e) => ({ subtype: e.subtype, ...e.data }))
}

/** The <task-notification> blocks in a text. */
export function notificationBlocks(text) {
  return text.match(/<task-notification>[\s\S]*?<\/task-notification>/g) ?? []
}

/** Every distinct <task-notification> block the model received in user messages, in order of arrival. */
export function modelNotifications(requests) {
  const blocks = []
  const seen = new Set()
  for (const body of requests) {
    for (const m of messageTexts(body)) {
      if (m.role !== 'user') continue
      for (const b of notificationBlocks(m.text)) {
        if (!seen.has(b)) {
          seen.add(b)
          blocks.push(b)
        }
      }
    }
  }
  return blocks
}

/** The numbers of the chatty dev server's 10 ERROR lines found in `texts`, sorted. */
export function chattyErrorLines(texts) {
  const errorLines = new Set()
  for (const b of texts) for (const m of b.matchAll(/ERROR request (\d+) failed/g)) errorLines.add(Number(m[1]))
  return [...errorLines].sort((a, b) => a - b)
}

/**
 * The chatty dev server watched with the monitor tool, found through tool_search and called through
 * tool_call. The model keeps its turn until the server has written its last line (a barrier file)
 * and one more tool round trip, then ends it; the CLI then hands the queued notifications to the
 * model as one message. Returns what reached the model.
 */
export async function chattyScenario({ qwenDir, env = {}, timeoutMs = 180_000 }) {
  const sandbox = makeSandbox()
  const doneFile = path.join(sandbox.root, 'chatty.done')
  const command = `CHATTY_DONE_FILE=${doneFile} bash ${CHATTY}`
  const log = []
  const server = await startModelServer(async (body, { index }) => {
    const last = lastMessage(body)
    log.push({ index, role: last?.role, text: last?.text?.slice(0, 300) })
    if (index === 0) return { toolCalls: [{ name: 'tool_search', arguments: { query: 'select:monitor' } }] }
    if (index === 1) {
      return {
        toolCalls: [{ name: 'tool_call', arguments: { name: 'monitor', arguments: { command, description: 'chatty dev server' } } }],
      }
    }
    if (index === 2) {
      await waitForFile(doneFile, timeoutMs)
      return { toolCalls: [{ name: 'run_shell_command', arguments: { command: `cat ${doneFile}`, description: 'barrier' } }] }
    }
    if (index === 3) return { text: 'Watching the dev server.' }
    return { text: 'Noted.' }
  })
  try {
    const q = startQwen({ qwenDir, sandbox, modelUrl: server.url, prompt: 'Start the dev server and watch it for errors.', env, timeoutMs })
    const result = await q.done
    const toModel = server.requests.slice(3).flatMap((body) => messageTexts(body).filter((m) => m.role === 'user'))
    const blocks = modelNotifications(server.requests)
    const monitorStarted = server.requests
      .flatMap((b) => messageTexts(b))
      .find((m) => m.role === 'tool' && m.text.startsWith('Monitor started.'))
    return {
      result,
      taskEvents: taskEventsOf(result),
      requests: server.requests.length,
      log,
      blocks,
      notifications: blocks.length,
      modelBytes: blocks.reduce((n, b) => n + Buffer.byteLength(b), 0),
      errorLines: chattyErrorLines(blocks),
      monitorStarted: monitorStarted?.text,
      toModel,
    }
  } finally {
    await server.close()
    sandbox.cleanup()
  }
}

/** The text of the last message of a request (a tool result or the user's message). */
export const lastText = (body) => lastMessage(body)?.text ?? ''

const readStatus = (file) => {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

/** Parses the CLI's "Background shell started." text. */
export function parseShellStarted(text) {
  const id = /^id: (bg_\w+)$/m.exec(text)?.[1]
  const pid = Number(/^pid: (\d+)$/m.exec(text)?.[1]) || undefined
  const outputFile = /^output file: (.+)$/m.exec(text)?.[1]
  const statusFile = /^status file: (.+)$/m.exec(text)?.[1]
  return { id, pid, outputFile, statusFile }
}

/** The failing background shell: both streams, colour codes, exit 3. */
export const FAILING_COMMAND = "printf '\\033[31mout-1\\033[0m\\n'; printf 'err-1\\n' >&2; printf '\\033[1mout-2\\033[0m\\n'; exit 3"

/**
 * Calls the CLI refuses before running anything: foreground sleeps (the shell tool's sleep guard)
 * and a monitor command with a non-final `&` (the monitor tool's own check).
 */
export const GUARDED_CALLS = [
  { tool: 'run_shell_command', command: 'sleep 5' },
  { tool: 'run_shell_command', command: 'sleep 3 && echo hi' },
  { tool: 'run_shell_command', command: 'sleep 2 # intentional-sleep: x' },
  { tool: 'monitor', command: 'sleep 100 & echo hi' },
]

function guardCall(i) {
  const { tool, command } = GUARDED_CALLS[i]
  if (tool === 'monitor') return { toolCalls: [{ name: 'tool_call', arguments: { name: 'monitor', arguments: { command, description: 'guarded' } } }] }
  return { toolCalls: [{ name: tool, arguments: { command, description: 'guarded' } }] }
}

/**
 * Background shells and task_stop: a shell that prints to stdout and stderr and exits 3; a shell
 * `sleep 600` stopped with task_stop; a monitor stopped with task_stop. The model waits on each
 * shell's status file. Returns the texts the model got, the files and the processes' fates.
 */
export async function shellsScenario({ qwenDir, env = {}, timeoutMs = 180_000 }) {
  const sandbox = makeSandbox()
  const monPidFile = path.join(sandbox.root, 'monitor.pid')
  const st = { guards: [] }
  const server = await startModelServer(async (body, { index }) => {
    const text = lastText(body)
    switch (index) {
      case 0:
        return {
          toolCalls: [
            {
              name: 'run_shell_command',
              arguments: { command: FAILING_COMMAND, is_background: true, description: 'failing job' },
            },
          ],
        }
      case 1: {
        st.failing = { started: text, ...parseShellStarted(text) }
        await until(() => readStatus(st.failing.statusFile)?.status !== 'running' && readStatus(st.failing.statusFile), 'the failing shell to settle', timeoutMs)
        st.failing.status = readStatus(st.failing.statusFile)
        st.failing.output = fs.readFileSync(st.failing.outputFile, 'utf8')
        return { toolCalls: [{ name: 'run_shell_command', arguments: { command: 'sleep 600', is_background: true, description: 'long job' } }] }
      }
      case 2:
        st.long = { started: text, ...parseShellStarted(text) }
        st.long.aliveBefore = isAlive(st.long.pid)
        st.long.environ = environOf(st.long.pid)
        return { toolCalls: [{ name: 'tool_search', arguments: { query: 'select:task_stop,monitor' } }] }
      case 3:
        return { toolCalls: [{ name: 'tool_call', arguments: { name: 'task_stop', arguments: { task_id: st.long.id } } }] }
      case 4: {
        st.long.stopText = text
        await until(() => readStatus(st.long.statusFile)?.status !== 'running' && readStatus(st.long.statusFile), 'the stopped shell to settle', timeoutMs)
        st.long.status = readStatus(st.long.statusFile)
        await until(() => !isAlive(st.long.pid), 'the stopped shell to die', timeoutMs)
        return {
          toolCalls: [
            {
              name: 'tool_call',
              arguments: { name: 'monitor', arguments: { command: `echo $$ > ${monPidFile}; echo ready; exec sleep 600`, description: 'sleeper' } },
            },
          ],
        }
      }
      case 5: {
        st.monitor = { started: text, id: /^id: (mon_\w+)$/m.exec(text)?.[1] }
        st.monitor.pid = Number(await until(() => fs.readFileSync(monPidFile, 'utf8').trim(), 'the monitor pid file', timeoutMs))
        st.monitor.aliveBefore = isAlive(st.monitor.pid)
        st.monitor.environ = environOf(st.monitor.pid)
        return { toolCalls: [{ name: 'tool_call', arguments: { name: 'task_stop', arguments: { task_id: st.monitor.id } } }] }
      }
      case 6:
        st.monitor.stopText = text
        await until(() => !isAlive(st.monitor.pid), 'the stopped monitor to die', timeoutMs)
        return guardCall(0)
      case 7:
      case 8:
      case 9:
      case 10: {
        st.guards.push(text)
        const next = index - 6
        return next < GUARDED_CALLS.length ? guardCall(next) : { text: 'All done.' }
      }
      default:
        return { text: 'Noted.' }
    }
  })
  try {
    const q = startQwen({ qwenDir, sandbox, modelUrl: server.url, prompt: 'Run the jobs.', env, timeoutMs })
    const result = await q.done
    const notifications = []
    for (const body of server.requests) for (const m of messageTexts(body)) if (m.role === 'user') notifications.push(...notificationBlocks(m.text))
    const taskEvents = taskEventsOf(result)
    return { result, requests: server.requests.length, ...st, notifications: [...new Set(notifications)], taskEvents }
  } finally {
    await server.close()
    sandbox.cleanup()
  }
}

/**
 * Containment: a background shell `trap "" TERM; sleep A & sleep B` and a monitor `sleep C`; once
 * the three sleeps (and the shell's bash) run, the CLI either is SIGKILLed (all of its processes:
 * the launcher and the CLI it relaunches) or ends its turn and exits normally. Returns the task
 * processes, how many are alive `observeMs` after the CLI's end and, with `waitAllDeadMs`, when the
 * last one ended (within that bound); the survivors are then killed.
 */
export async function containmentScenario({ qwenDir, mode, env = {}, observeMs = 2000, waitAllDeadMs = 0, timeoutMs = 180_000 }) {
  const sandbox = makeSandbox()
  const tasks = containmentTasks()
  let release
  const released = new Promise((r) => (release = r))
  let ready
  const readyP = new Promise((r) => (ready = r))
  const server = await startModelServer(async (body, { index }) => {
    switch (index) {
      case 0:
        return { toolCalls: [{ name: 'run_shell_command', arguments: { command: tasks.shellCommand, is_background: true, description: 'daemon' } }] }
      case 1:
        return { toolCalls: [{ name: 'tool_search', arguments: { query: 'select:monitor' } }] }
      case 2:
        return { toolCalls: [{ name: 'tool_call', arguments: { name: 'monitor', arguments: { command: tasks.monitorCommand, description: 'sleeper' } } }] }
      case 3: {
        const pids = await until(tasks.find, 'the task processes', timeoutMs)
        ready(pids)
        if (mode === 'sigkill') await released
        return { text: 'Leaving them running.' }
      }
      default:
        return { text: 'Noted.' }
    }
  })
  let taskPids = []
  let cliProcesses = 0
  try {
    const q = startQwen({ qwenDir, sandbox, modelUrl: server.url, prompt: 'Start the daemon and the sleeper.', env, timeoutMs })
    taskPids = await Promise.race([readyP, q.done.then((r) => Promise.reject(new Error(`the CLI ended early: ${r.code} ${r.signal} ${r.stderr.slice(-3000)}`)))])
    let endedAt
    if (mode === 'sigkill') {
      const cliPids = nodeDescendants(q.child.pid)
      for (const pid of cliPids) process.kill(pid, 'SIGKILL')
      endedAt = Date.now()
      cliProcesses = cliPids.length
      release()
    } else {
      await q.exited
      endedAt = Date.now()
    }
    // The metric: how many task processes are alive `observeMs` after the CLI ended (or the time
    // at which none was left, if earlier); then a bounded wait for all of them to end (the
    // integrated CLI's guarantee), for the tests.
    const { survivors, survivorsAtMs, allDeadMs } = await observeSurvivors(taskPids, endedAt, { observeMs, waitAllDeadMs })
    killPids(taskPids)
    const result = await q.done
    return { mode, code: result.code, taskPids, cliProcesses, survivors, survivorsAtMs, allDeadMs }
  } finally {
    killPids(taskPids)
    release?.()
    await server.close()
    sandbox.cleanup()
  }
}

export const FIREHOSE = path.join(here, '..', '..', 'kit', 'fixtures', 'firehose.sh')

/** Whether `pid` has an open fd linking to `target` (such as 'pipe:[1234]'). */
/** CPU ticks of every thread of `pids`: Map of 'pid/tid comm' to utime + stime. */
function threadTicks(pids) {
  const out = new Map()
  for (const pid of pids) {
    let tids = []
    try {
      tids = fs.readdirSync(`/proc/${pid}/task`)
    } catch {}
    for (const tid of tids) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        out.set(`${pid}/${tid} ${comm}`, Number(f[11]) + Number(f[12]))
      } catch {}
    }
  }
  return out
}

function holdsFile(pid, target) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === target
      } catch {
        return false
      }
    })
  } catch {
    return false
  }
}

/** Bytes written so far by the children of `pid` (the producer's `head`), from /proc/<pid>/io. */
function childrenWchar(pid) {
  let n = 0
  for (const child of childrenOf(pid)) {
    try {
      n = Math.max(n, Number(/^wchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${child}/io`, 'utf8'))[1]))
    } catch {}
  }
  return n
}

/**
 * The firehose: a monitor on `yes | head -c 200 MB`. Measured from outside: the CLI's CPU time
 * (all its processes, from the monitor's start to the moment the CLI has read the producer's
 * output to the end; and by thread), the producer's own throughput, the CLI's peak RSS (VmHWM),
 * and the time from the monitor's start to its terminal notification.
 *
 * Headless mode queues monitor notifications while the model's turn lasts and hands them over
 * when it ends; a notification that arrives while that hand-over is being answered is written to
 * the stream-json output at once (a `task_notification` system event), which is where the
 * terminal notification is timed. So: a tiny monitor (`echo`) runs to its end first, so that the
 * queue is not empty when the turn ends (an empty queue ends the run, and the CLI then cancels
 * its monitors); the firehose starts; the model ends its turn at once; the hand-over is answered
 * only once the producer is done, the CLI has read its output to the end and the terminal
 * notification has been written.
 *
 * `warm` (default true): before the window the model runs one foreground shell command and the
 * CLI's CPU is let settle. The CLI parses every shell command with tree-sitter's bash grammar in
 * WebAssembly, and V8 compiles the hot parts of that module with TurboFan on a background thread
 * after the first parse, about a second of CPU once per CLI process; warm measures the monitor
 * with that behind it, cold (warm: false) with it inside the window, as in a session whose first
 * shell command is the monitor.
 */
export async function firehoseScenario({ qwenDir, env = {}, bytes = 200_000_000, clkTck = 100, warm = true, timeoutMs = 300_000 }) {
  const sandbox = makeSandbox()
  const doneFile = path.join(sandbox.root, 'firehose.done')
  const tinyPidFile = path.join(sandbox.root, 'tiny.pid')
  const m = { monitorIds: [] }
  let q
  const terminal = { at: 0, status: undefined }
  let terminalSeen
  const terminalP = new Promise((r) => (terminalSeen = r))
  const onEvent = (event, now) => {
    // The firehose monitor's id comes with its task_started event (registration order: tiny, firehose).
    if (event.type === 'system' && event.subtype === 'task_started') m.monitorIds.push(event.data?.task_id)
    if (event.type === 'system' && event.subtype === 'task_notification') {
      const status = event.data?.status
      if (event.data?.task_id === m.monitorIds[1] && status && status !== 'running' && !terminal.at) {
        terminal.at = now
        terminal.status = status
        terminalSeen()
      }
    }
  }
  const steps = []
  if (warm) steps.push('warm')
  steps.push('search', 'tiny', 'firehose', 'end-turn', 'hand-over')
  const server = await startModelServer(async (body, { index }) => {
    const step = steps[index]
    switch (step) {
      case 'warm':
        return { toolCalls: [{ name: 'run_shell_command', arguments: { command: 'echo warm', description: 'warm up' } }] }
      case 'search':
        if (warm) await cpuQuiet(nodeDescendants(q.child.pid), "the CLI's CPU to settle", timeoutMs)
        return { toolCalls: [{ name: 'tool_search', arguments: { query: 'select:monitor' } }] }
      case 'tiny':
        return {
          toolCalls: [{ name: 'tool_call', arguments: { name: 'monitor', arguments: { command: `echo $$ > ${tinyPidFile}; echo ready`, description: 'tiny' } } }],
        }
      case 'firehose': {
        // The tiny monitor has run to its end (its notifications are queued by now).
        const tiny = Number(await until(() => fs.readFileSync(tinyPidFile, 'utf8').trim(), 'the tiny monitor', timeoutMs))
        await until(() => !isAlive(tiny) && !fs.existsSync(`/proc/${tiny}`), 'the tiny monitor to end', timeoutMs)
        if (warm) await cpuQuiet(nodeDescendants(q.child.pid), "the CLI's CPU to settle", timeoutMs)
        m.cliPids = nodeDescendants(q.child.pid)
        m.cpuBefore = m.cliPids.reduce((n, p) => n + cpuTicks(p), 0)
        m.threadsBefore = threadTicks(m.cliPids)
        m.startedAt = Date.now()
        m.startedNs = process.hrtime.bigint()
        return {
          toolCalls: [
            { name: 'tool_call', arguments: { name: 'monitor', arguments: { command: `FIREHOSE_BYTES=${bytes} bash ${FIREHOSE} ${doneFile}`, description: 'firehose' } } },
          ],
        }
      }
      case 'end-turn':
        return { text: 'Watching.' }
      case 'hand-over': {
        // The producer's stdout pipe, to tell when the CLI has read it to the end.
        const pid = Number(await until(() => fs.readFileSync(`${doneFile}.pid`, 'utf8').trim(), 'the firehose pid', timeoutMs))
        // (A producer that is already gone cannot be looked at: then only its end is waited for.)
        const pipe = await until(() => {
          try {
            return fs.readlinkSync(`/proc/${pid}/fd/1`)
          } catch (err) {
            if (fs.existsSync(doneFile)) return 'gone'
            throw err
          }
        }, 'the firehose stdout', timeoutMs)
        await waitForFile(doneFile, timeoutMs)
        m.producerEndAt = Date.now()
        // The CLI closes its end of the pipe once it read everything (stock: the 'close' event;
        // taskstream: EOF in the reader thread), just before it settles the monitor.
        if (pipe !== 'gone') await until(() => !m.cliPids.some((p) => holdsFile(p, pipe)), 'the CLI to finish reading', timeoutMs)
        m.readEndAt = Date.now()
        m.readEndNs = process.hrtime.bigint()
        m.cpuAfter = m.cliPids.reduce((n, p) => n + cpuTicks(p), 0)
        m.threadsAfter = threadTicks(m.cliPids)
        m.peakRssKb = Math.max(...m.cliPids.map(peakRssKb))
        m.handOver = messageTexts(body).at(-1)?.text ?? ''
        await Promise.race([terminalP, new Promise((r) => setTimeout(r, timeoutMs))])
        return { text: 'Noted.' }
      }
      default:
        return { text: 'Noted.' }
    }
  })
  try {
    q = startQwen({ qwenDir, sandbox, modelUrl: server.url, prompt: 'Watch the firehose.', env, timeoutMs, onEvent })
    const result = await q.done
    const [b, ns] = fs.readFileSync(doneFile, 'utf8').trim().split(' ').map(Number)
    return {
      code: result.code,
      warm,
      cliCpuMs: ((m.cpuAfter - m.cpuBefore) * 1000) / clkTck,
      producerMBps: b / 1e6 / (ns / 1e9),
      producerSeconds: ns / 1e9,
      readEndAfterProducerMs: m.readEndAt - m.producerEndAt,
      peakRssMB: m.peakRssKb / 1024,
      // Time from the model's tool_call of the monitor to the terminal task_notification event.
      terminalMs: terminal.at ? terminal.at - m.startedAt : undefined,
      terminalStatus: terminal.status,
      // Whether the terminal notification was already queued when the turn ended (then its time is
      // that of the hand-over, an upper bound).
      terminalQueued: new RegExp(`<task-id>${m.monitorIds[1]}</task-id>[\\s\\S]*?<status>(completed|failed|cancelled)</status>`).test(m.handOver),
      // The CLI's CPU by thread over the same window (threads with 10 ms or more; 'pid/tid name').
      threadCpuMs: Object.fromEntries(
        [...m.threadsAfter]
          .map(([k, v]) => [k, ((v - (m.threadsBefore.get(k) ?? 0)) * 1000) / clkTck])
          .filter(([, ms]) => ms >= 10)
          .sort((a, b) => b[1] - a[1]),
      ),
      // The measured window on the monotonic clock (V8's CPU profiles use the same clock).
      windowMonotonicMs: [Number(m.startedNs / 1000n) / 1000, Number(m.readEndNs / 1000n) / 1000],
    }
  } finally {
    await server.close()
    sandbox.cleanup()
  }
}

/**
 * Task control from the environment (taskstream API.md §6.8, runtime.mjs): two monitors started
 * through the monitor tool, a Node that allocates 8 MiB every 10 ms (it stops by itself at 1 GiB,
 * so a run without a limit ends too) and a `sleep 60`. With TASKSTREAM_QWEN_MEMORY_LIMIT and
 * TASKSTREAM_QWEN_TIMEOUT set, the first fails at its memory limit and the second at its deadline;
 * the model reads why in their notifications. Returns the notification blocks by description.
 */
export async function taskControlScenario({ qwenDir, env = {}, timeoutMs = 180_000 }) {
  const sandbox = makeSandbox()
  const pidFile = path.join(sandbox.root, 'slow.pid')
  const allocator = `node -e "const a = []; const t = setInterval(() => { a.push(Buffer.alloc(8 << 20, 1)); if (a.length >= 128) { clearInterval(t); console.log('survived') } }, 10)"`
  const server = await startModelServer(async (body, { index }) => {
    if (index === 0) return { toolCalls: [{ name: 'tool_search', arguments: { query: 'select:monitor' } }] }
    if (index === 1) {
      return { toolCalls: [{ name: 'tool_call', arguments: { name: 'monitor', arguments: { command: allocator, description: 'leaky test' } } }] }
    }
    if (index === 2) {
      const command = `echo $$ > ${pidFile}; exec sleep 60`
      return { toolCalls: [{ name: 'tool_call', arguments: { name: 'monitor', arguments: { command, description: 'slow watcher' } } }] }
    }
    if (index === 3) {
      // The model keeps its turn until the watcher is gone (its deadline), and one round trip more.
      const pid = Number(await until(() => fs.readFileSync(pidFile, 'utf8').trim(), 'the watcher to start', timeoutMs))
      await until(() => !isAlive(pid), 'the watcher to end', timeoutMs)
      return { toolCalls: [{ name: 'run_shell_command', arguments: { command: 'true', description: 'barrier' } }] }
    }
    if (index === 4) return { text: 'Watching both.' }
    return { text: 'Noted.' }
  })
  try {
    const q = startQwen({ qwenDir, sandbox, modelUrl: server.url, prompt: 'Run the tests and the watcher.', env, timeoutMs })
    const result = await q.done
    const blocks = modelNotifications(server.requests)
    const started = server.requests
      .flatMap((b) => messageTexts(b))
      .filter((m) => m.role === 'tool' && /^Monitor (started|failed)/.test(m.text))
      .map((m) => m.text)
      .filter((text, i, all) => all.indexOf(text) === i)
    const byDescription = (description) => blocks.filter((b) => b.includes(`Monitor "${description}"`))
    return { result, started, blocks, leaky: byDescription('leaky test'), slow: byDescription('slow watcher') }
  } finally {
    await server.close()
    sandbox.cleanup()
  }
}
