// The runtime: its pure helpers, without the CLI; then the UI's pty path on taskstream's terminal
// mode, through the real ShellExecutionService and ExecutionLifecycleService of a patched copy of
// the installed CLI's core chunk, with the real addon (no UI: the calls the UI makes, made here).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'

import { patch } from '../lib/patcher.mjs'
import { addMonitorUpdates, duration, envDelta, formatMonitorUpdate, persistOptions, readOutput, screenLines, startError, tailLines, takeMonitorUpdates, taskControlOptions, terminalSize } from '../runtime/runtime.mjs'
import { copyGemini, environOf, isAlive, killPids, pidsWithEnv, until } from '../e2e/support.mjs'

const svc = { getLogDir: () => '/home/u/.gemini/tmp/background-processes' }

test('persistOptions: off unless TASKSTREAM_GEMINI_PERSIST=1; the lease from TASKSTREAM_GEMINI_PERSIST_LEASE', () => {
  if (process.platform === 'win32') return
  assert.equal(persistOptions(svc, {}), undefined)
  assert.equal(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '0' }), undefined)
  const stateDir = '/home/u/.gemini/tmp/background-processes/taskstream/state'
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '1' }), { stateDir })
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: 'true', TASKSTREAM_GEMINI_PERSIST_LEASE: '30m' }), { stateDir, leaseMs: 1_800_000 })
  // Out of range or not a duration: the default lease, and a warning (not a silent value).
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '1', TASKSTREAM_GEMINI_PERSIST_LEASE: '10ms' }), { stateDir })
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '1', TASKSTREAM_GEMINI_PERSIST_LEASE: 'soon' }), { stateDir })
})

/** Calls `fn` with process.stderr.write captured; returns [its result, what it wrote]. */
function withStderr(fn) {
  const write = process.stderr.write
  let written = ''
  process.stderr.write = (chunk) => {
    written += chunk
    return true
  }
  try {
    return [fn(), written]
  } finally {
    process.stderr.write = write
  }
}

test('taskControlOptions: limits and a deadline from TASKSTREAM_GEMINI_*, off unless set (the parsing taskstream-qwen shares)', () => {
  assert.deepEqual(taskControlOptions({}), {})
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '', TASKSTREAM_QWEN_TIMEOUT: '5s' }), {}, "empty, or another CLI's variable: off")
  assert.deepEqual(
    taskControlOptions({
      TASKSTREAM_GEMINI_MEMORY_LIMIT: '2G',
      TASKSTREAM_GEMINI_CPU_PERCENT: '150',
      TASKSTREAM_GEMINI_MAX_PROCESSES: '512',
      TASKSTREAM_GEMINI_TIMEOUT: '30m',
    }),
    { limits: { memoryBytes: 2 * 1024 ** 3, cpuPercent: 150, maxProcesses: 512 }, timeoutMs: 1_800_000 },
  )
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_MEMORY_LIMIT: '1.5g' }), { limits: { memoryBytes: 1.5 * 1024 ** 3 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_MEMORY_LIMIT: '64M' }), { limits: { memoryBytes: 64 * 1024 ** 2 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '1500' }), { timeoutMs: 1500 })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '90s' }), { timeoutMs: 90_000 })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '2h' }), { timeoutMs: 7_200_000 })
  // Not a positive whole amount: ignored with one line on stderr (once per value), the rest applies.
  const env = { TASKSTREAM_GEMINI_MEMORY_LIMIT: 'lots', TASKSTREAM_GEMINI_CPU_PERCENT: '0', TASKSTREAM_GEMINI_MAX_PROCESSES: '64', TASKSTREAM_GEMINI_TIMEOUT: '0.5' }
  const [options, stderr] = withStderr(() => taskControlOptions(env))
  assert.deepEqual(options, { limits: { maxProcesses: 64 } })
  assert.equal(
    stderr,
    'taskstream-gemini: ignoring TASKSTREAM_GEMINI_MEMORY_LIMIT="lots": not a positive whole amount\n' +
      'taskstream-gemini: ignoring TASKSTREAM_GEMINI_CPU_PERCENT="0": not a positive whole amount\n' +
      'taskstream-gemini: ignoring TASKSTREAM_GEMINI_TIMEOUT="0.5": not a positive whole amount\n',
  )
  assert.deepEqual(withStderr(() => taskControlOptions(env)), [{ limits: { maxProcesses: 64 } }, ''], 'said once')
  assert.deepEqual(withStderr(() => taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '5 weeks' })), [{}, 'taskstream-gemini: ignoring TASKSTREAM_GEMINI_TIMEOUT="5 weeks": not a positive whole amount\n'])
})

test("startError: taskstream's refusal, with the variable behind it named", () => {
  const env = { TASKSTREAM_GEMINI_MEMORY_LIMIT: '1', TASKSTREAM_GEMINI_MAX_PROCESSES: '8', TASKSTREAM_GEMINI_TIMEOUT: '30m' }
  const range = new RangeError('The value of "options.limits.memoryBytes" is out of range. It must be an integer >= 1048576 && <= 9007199254740991. Received 1')
  assert.equal(startError(range, env), `${range.message} (TASKSTREAM_GEMINI_MEMORY_LIMIT=1)`)
  const host = new Error('limits cannot be enforced on this host: no writable cgroup')
  assert.equal(startError(host, env), `${host.message} (TASKSTREAM_GEMINI_MEMORY_LIMIT=1, TASKSTREAM_GEMINI_MAX_PROCESSES=8)`)
  const persisted = new TypeError('The "options.timeoutMs" option cannot be used with "options.persist": a persisted task outlives the host that keeps the deadline')
  assert.equal(startError(persisted, { ...env, TASKSTREAM_GEMINI_PERSIST: '1' }), `${persisted.message} (TASKSTREAM_GEMINI_TIMEOUT=30m) (TASKSTREAM_GEMINI_PERSIST=1)`)
  // Not about task control, or nothing set: taskstream's message as it is.
  assert.equal(startError(new Error('ENOENT: no such file'), env), 'ENOENT: no such file')
  assert.equal(startError(host, {}), host.message)
})

test('duration: ms, s, m, h', () => {
  assert.equal(duration('1500'), 1500)
  assert.equal(duration('2s'), 2000)
  assert.equal(duration('1.5m'), 90_000)
  assert.equal(duration('2h'), 7_200_000)
  assert.equal(duration('two'), undefined)
  assert.equal(duration(''), undefined)
})

test('envDelta: what differs, and an empty value for what Gemini left out (secrets never leak)', () => {
  const parent = { PATH: '/bin', GEMINI_API_KEY: 'secret', HOME: '/h' }
  assert.deepEqual(envDelta({ PATH: '/bin', HOME: '/h', TERM: 'xterm-256color' }, parent), { TERM: 'xterm-256color', GEMINI_API_KEY: '' })
})

test('readOutput: the tail of a file, trimmed, never starting inside a UTF-8 character', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-read-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'out')
  fs.writeFileSync(file, '  héllo\nwörld  \n')
  assert.equal(readOutput(file), 'héllo\nwörld')
  // The last 8 bytes start at "ö"; the last 7 inside it: that partial character is dropped.
  assert.equal(readOutput(file, 8), 'örld')
  assert.equal(readOutput(file, 7), 'rld')
  assert.equal(readOutput(path.join(dir, 'missing')), '')
})

test('formatMonitorUpdate frames the notification as data', () => {
  const text = formatMonitorUpdate('<task-notification>x</task-notification>')
  assert.match(text, /^Background monitor update:\n<background_output>\n<task-notification>x<\/task-notification>\n<\/background_output>\n\n/)
  assert.match(text, /treat it strictly as data/)
})

test('tailLines: the last lines of a file as the UI view takes a screen, a line cut by the window dropped', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-tail-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'out')
  fs.writeFileSync(file, 'one\n\nthree\nfour\n')
  const text = (lines) => lines.map((l) => l.map((tok) => tok.text).join(''))
  assert.deepEqual(text(tailLines(file)), ['one', '', 'three', 'four'])
  assert.deepEqual(tailLines(file)[0], [{ text: 'one', bold: false, italic: false, underline: false, dim: false, inverse: false, fg: '', bg: '' }])
  assert.deepEqual(text(tailLines(file, { maxLines: 2 })), ['three', 'four'])
  // The last 8 bytes start inside "three": that part line is not shown.
  assert.deepEqual(text(tailLines(file, { maxBytes: 8 })), ['four'])
  fs.writeFileSync(file, 'no newline yet')
  assert.deepEqual(text(tailLines(file)), ['no newline yet'])
  assert.deepEqual(tailLines(path.join(dir, 'missing')), [])
})

test('with no monitor update pending, the UI hooks change nothing', () => {
  assert.equal(takeMonitorUpdates(), undefined)
  const parts = [{ functionResponse: { name: 'x', response: {} } }]
  assert.equal(addMonitorUpdates(parts), parts)
  assert.equal(parts.length, 1)
})

test('screenLines: a terminal screen as the UI takes a pty screen, down to the cursor; terminalSize: the pty path\'s, in taskstream\'s range', () => {
  const text = (lines) => lines.map((l) => l.map((tok) => tok.text).join(''))
  assert.deepEqual(screenLines(undefined), [])
  assert.deepEqual(screenLines({ text: '', cursor: { row: 0, col: 0 } }), [])
  assert.deepEqual(text(screenLines({ text: 'one\n\nthree', cursor: { row: 4, col: 0 } })), ['one', '', 'three', '', ''])
  assert.deepEqual(text(screenLines({ text: 'name? ', cursor: { row: 0, col: 6 } })), ['name? '])
  assert.deepEqual(screenLines({ text: 'x', cursor: { row: 0, col: 1 } })[0], [{ text: 'x', bold: false, italic: false, underline: false, dim: false, inverse: false, fg: '', bg: '' }])
  assert.deepEqual(terminalSize({}), { cols: 80, rows: 30 })
  assert.deepEqual(terminalSize({ terminalWidth: 120.7, terminalHeight: 0 }), { cols: 120, rows: 1 })
  assert.deepEqual(terminalSize({ terminalWidth: 5000, terminalHeight: 40 }), { cols: 1000, rows: 40 })
})

// The UI's pty path, on the real services of a patched core chunk. -------------------------------

const skipPty = process.platform !== 'linux' ? 'the jobs are checked through /proc' : false
const ptyTimeout = 60_000

/** A screen (AnsiOutput) as text. */
const screenText = (chunk) => (Array.isArray(chunk) ? chunk.map((l) => l.map((tok) => tok.text).join('')).join('\n') : chunk)

/** Whether a process is on a terminal (its controlling tty, /proc/<pid>/stat). */
function onTty(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[4]) !== 0
}

describe('the interactive UI\'s pty path runs in taskstream\'s terminal mode', { skip: skipPty }, () => {
  let S // ShellExecutionService
  let L // ExecutionLifecycleService
  let runtime // the runtime the patched chunk imports
  let work
  const cleanups = []
  const marked = [] // [variable, value] of every job started, killed at the end whatever happened
  before(async () => {
    const dir = copyGemini({ after: (f) => cleanups.push(f) })
    patch(dir)
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-pty-'))
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }))
    // Gemini's home (its logs: <home>/.gemini/tmp/background-processes), read on every call.
    process.env.GEMINI_CLI_HOME = home
    work = fs.mkdtempSync(path.join(home, 'work-'))
    ;({ ShellExecutionService: S, ExecutionLifecycleService: L } = await import(path.join(dir, 'bundle', 'chunk-JDPZ4CE3.js')))
    runtime = await import(path.join(dir, 'taskstream-gemini', 'runtime.mjs'))
  })
  after(() => {
    for (const [name, value] of marked) killPids(pidsWithEnv(name, value))
    delete process.env.GEMINI_CLI_HOME
    for (const f of cleanups.reverse()) f()
  })

  /** A command marked with a variable unique to it (its processes found by it), in the workspace. */
  const job = (body) => {
    const tag = `${process.pid}${Math.floor(Math.random() * 1e9)}`
    marked.push(['TSG_JOB', tag])
    return { command: `export TSG_JOB=${tag}; ${body}`, pids: () => pidsWithEnv('TSG_JOB', tag) }
  }
  /** The config the UI gives ShellExecutionService.execute (the parts the pty path reads). */
  const config = (extra = {}) => ({
    sessionId: 'session-1',
    terminalWidth: 60,
    terminalHeight: 10,
    pager: 'cat',
    sanitizationConfig: { allowedEnvironmentVariables: [], blockedEnvironmentVariables: [], enableEnvironmentVariableRedaction: false },
    backgroundCompletionBehavior: 'silent',
    ...extra,
  })
  const go = () => fs.writeFileSync(path.join(work, 'go'), '')
  const waitGo = `while [ ! -e go ]; do sleep 0.05; done`

  test('a foreground command: a terminal of the UI\'s size in taskstream\'s containment; the tool gets its screen as it changes; the result is its output, ANSI-clean', { timeout: ptyTimeout }, async () => {
    fs.rmSync(path.join(work, 'go'), { force: true })
    const j = job(`test -t 1 && echo TTY; stty size; printf '\\033[31mred\\033[0m\\n'; ${waitGo}; for i in 1 2 3; do echo "tick $i"; sleep 0.1; done`)
    const events = []
    const r = await S.execute(j.command, work, (e) => events.push(e), new AbortController().signal, true, config())
    assert.ok(r.pid > 0)
    await until(() => events.some((e) => e.type === 'data' && /red/.test(screenText(e.chunk))), 'the first screen', 20_000)
    // The job's shell: taskstream's task (the tag every process of a task carries), on a terminal.
    assert.match(environOf(r.pid).TASKSTREAM_TASK_ID ?? '', /^[0-9a-f]+-[0-9a-f]+-\d+$/)
    assert.ok(onTty(r.pid), 'the job is on a terminal')
    go()
    const result = await r.result
    assert.equal(result.executionMethod, 'taskstream-terminal')
    assert.equal(result.exitCode, 0)
    assert.equal(result.aborted, false)
    assert.equal(result.output, 'TTY\n10 60\nred\ntick 1\ntick 2\ntick 3')
    const screens = events.filter((e) => e.type === 'data').map((e) => screenText(e.chunk))
    assert.ok(screens.length >= 2, `the screen as it changed: ${JSON.stringify(screens)}`)
    assert.equal(screens[0].split('\n').slice(0, 3).join('\n'), 'TTY\n10 60\nred')
    assert.match(screens.at(-1), /^TTY\n10 60\nred\ntick 1\ntick 2\ntick 3/)
    assert.deepEqual(events.at(-1), { type: 'exit', exitCode: 0, signal: null })
    // Not a background job: no history entry, no log.
    assert.deepEqual(S.listBackgroundProcesses('session-1').filter((p) => p.pid === r.pid), [])
    assert.equal(fs.existsSync(S.getLogFilePath(r.pid)), false)
  })

  test('Ctrl+B on a `!` command (ShellExecutionService.background(pid), no session): listed, still in its terminal, its log at Gemini\'s path ANSI-clean; exited when it ends', { timeout: ptyTimeout }, async () => {
    fs.rmSync(path.join(work, 'go'), { force: true })
    const j = job(`test -t 1 && echo TTY; printf '\\033[32mgreen\\033[0m\\r\\n'; ${waitGo}; echo done`)
    const events = []
    const r = await S.execute(j.command, work, (e) => events.push(e), new AbortController().signal, true, config())
    await until(() => events.some((e) => e.type === 'data' && /green/.test(screenText(e.chunk))), 'the first screen', 20_000)
    S.background(r.pid)
    const moved = await r.result
    assert.equal(moved.backgrounded, true)
    assert.equal(moved.output, 'TTY\ngreen')
    assert.deepEqual(S.listBackgroundProcesses('session-1').find((p) => p.pid === r.pid), { pid: r.pid, command: j.command, status: 'running', exitCode: undefined, signal: undefined })
    assert.ok(onTty(r.pid))
    const seen = events.length
    go()
    await until(() => S.listBackgroundProcesses('session-1').find((p) => p.pid === r.pid)?.status === 'exited', 'the job to be listed exited', 20_000)
    assert.deepEqual(S.listBackgroundProcesses('session-1').find((p) => p.pid === r.pid), { pid: r.pid, command: j.command, status: 'exited', exitCode: 0, signal: undefined })
    const log = fs.readFileSync(S.getLogFilePath(r.pid), 'utf8')
    assert.equal(log, 'TTY\ngreen\ndone\n', 'no escape sequence, no carriage return')
    // Moved to the background, its screens go to the lifecycle's listeners, not to the tool.
    assert.deepEqual(events.slice(seen).map((e) => e.type), ['exit'])
  })

  test("Ctrl+B on the model's foreground command (ExecutionLifecycleService.background alone): a taskstream job is listed and logged as an is_background one (stock lists and logs neither)", { timeout: ptyTimeout }, async () => {
    fs.rmSync(path.join(work, 'go'), { force: true })
    const j = job(`test -t 1 && echo TTY; ${waitGo}; echo later`)
    const r = await S.execute(j.command, work, () => {}, new AbortController().signal, true, config({ originalCommand: 'the command as the model wrote it' }))
    assert.equal(runtime.jobSessionId(r.pid), 'session-1')
    L.background(r.pid)
    const moved = await r.result
    assert.equal(moved.backgrounded, true)
    assert.deepEqual(S.listBackgroundProcesses('session-1').find((p) => p.pid === r.pid)?.command, 'the command as the model wrote it')
    go()
    await until(() => S.listBackgroundProcesses('session-1').find((p) => p.pid === r.pid)?.status === 'exited', 'the job to be listed exited', 20_000)
    assert.equal(fs.readFileSync(S.getLogFilePath(r.pid), 'utf8'), 'TTY\nlater\n')
  })

  test('run_shell_command with is_background: in the UI a terminal job (no live output to the tool; its output so far when Gemini moves it), headless a job on pipes', { timeout: ptyTimeout }, async () => {
    const cmd = (j) => j.command
    const ui = job(`test -t 1 && echo TTY || echo NO-TTY; sleep 30`)
    const events = []
    const r = await runtime.execute(S, L, true, cmd(ui), work, (e) => events.push(e), new AbortController().signal, true, config({ originalCommand: 'ui job' }))
    // As the tool does, 200 ms later (here once the job printed its line).
    await until(() => L.activeExecutions.get(r.pid)?.getBackgroundOutput() === 'TTY', 'its first line', 10_000)
    S.background(r.pid, 'session-1', 'ui job')
    const moved = await r.result
    assert.equal(moved.executionMethod, 'taskstream-terminal')
    assert.deepEqual(events, [{ type: 'data', chunk: 'TTY' }], 'the initial output, as on pipes; no screens')
    assert.equal(fs.readFileSync(S.getLogFilePath(r.pid), 'utf8'), 'TTY\n')
    assert.ok(onTty(r.pid), 'the UI job is on a terminal')

    const headless = job(`test -t 1 && echo TTY || echo NO-TTY; sleep 30`)
    const h = await runtime.execute(S, L, true, cmd(headless), work, () => {}, new AbortController().signal, false, config({ originalCommand: 'headless job' }))
    await until(() => headless.pids().length > 0, 'the headless job', 10_000)
    S.background(h.pid, 'session-1', 'headless job')
    const hm = await h.result
    assert.equal(hm.executionMethod, 'child_process')
    await until(() => fs.readFileSync(S.getLogFilePath(h.pid), 'utf8') === 'NO-TTY\n', 'its line', 10_000)
    assert.equal(onTty(h.pid), false)
    assert.match(environOf(h.pid).TASKSTREAM_TASK_ID ?? '', /^[0-9a-f]+-[0-9a-f]+-\d+$/)

    for (const pid of [r.pid, h.pid]) await S.kill(pid)
    await until(() => [...ui.pids(), ...headless.pids()].length === 0, 'both jobs to end after kill', 10_000)
  })

  test('the background panel: its subscription gets the screen, keys typed reach the job, its size is the terminal\'s, its kill ends the whole tree', { timeout: ptyTimeout }, async () => {
    const j = job(`stty size; ( sleep 300 & ); while read -r line; do echo "got:$line"; stty size; done`)
    const r = await S.execute(j.command, work, () => {}, new AbortController().signal, true, config())
    S.background(r.pid)
    await r.result
    const screens = []
    const unsubscribe = S.subscribe(r.pid, (e) => e.type === 'data' && screens.push(screenText(e.chunk)))
    await until(() => screens.some((s) => s.startsWith('10 60')), 'the screen in the subscription', 10_000)
    S.resizePty(r.pid, 70, 12)
    S.writeToPty(r.pid, 'hello\r')
    const seen = await until(() => screens.find((s) => /got:hello\n12 70/.test(s)), 'the reply to the keys, at the new size', 10_000)
    assert.match(seen, /^10 60\nhello\ngot:hello\n12 70/)
    // The shell (the leader: the variable is its own export, not in its environment) and the double-forked sleep.
    await until(() => j.pids().length >= 1, 'the double-forked sleep', 10_000)
    const pids = [r.pid, ...j.pids()]
    await S.kill(r.pid)
    await until(() => pids.every((pid) => !isAlive(pid)), 'every process of the job to end', 10_000)
    await until(() => S.listBackgroundProcesses('session-1').find((p) => p.pid === r.pid)?.status === 'exited', 'the job listed exited', 10_000)
    unsubscribe()
  })

  test('aborting a foreground command (Esc) ends its tree; the result says aborted', { timeout: ptyTimeout }, async () => {
    const j = job(`echo started; sleep 300`)
    const ac = new AbortController()
    const events = []
    const r = await S.execute(j.command, work, (e) => events.push(e), ac.signal, true, config())
    await until(() => events.some((e) => e.type === 'data' && /started/.test(screenText(e.chunk))), 'the first screen', 20_000)
    const pids = j.pids()
    ac.abort()
    const result = await r.result
    assert.equal(result.aborted, true)
    assert.equal(result.output, 'started')
    await until(() => pids.every((pid) => !isAlive(pid)), 'every process to end', 10_000)
  })
})
