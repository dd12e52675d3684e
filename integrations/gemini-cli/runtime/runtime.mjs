// taskstream-gemini runtime: copied by `taskstream-gemini patch` into
// <gemini-cli>/taskstream-gemini/runtime.mjs and imported by the patched bundle chunk of
// @google/gemini-cli. Removed by `taskstream-gemini unpatch`.
//
// `run_shell_command` with `is_background: true` runs through taskstream's executeBackground():
// the job gets taskstream's containment (its own process group, and on Linux its own cgroup; a
// watchdog that ends it when the CLI dies, however the CLI ends), and its output goes from the
// child to a capped, ANSI-clean file without passing through JavaScript. Everything Gemini does
// around the job stays Gemini's: the same OS pid as the job's id, the same model-facing texts, its
// background history (`list_background_processes`), its log at
// ~/.gemini/tmp/background-processes/background-<pid>.log (taskstream's output file, hard-linked
// there when Gemini moves the job to the background, so `read_background_output` reads it
// unchanged), its completion behaviour (`inject | notify | silent`) through its
// ExecutionLifecycleService, and its kill path (the UI's, through the lifecycle service).
//
// Whenever the native path cannot do what the stock path would (a sandbox wraps the command,
// Windows, taskstream failing to load, TASKSTREAM_GEMINI=0), the CLI's own code runs unchanged.
//
// It also adds a tool the stock CLI lacks: `stop_background_process` (a job of this session,
// with its whole tree, through Gemini's own kill path).
//
// Switches (environment of the `gemini` process):
//   TASKSTREAM_GEMINI=0        the CLI's own background jobs and tools, as if unpatched
//   TASKSTREAM_GEMINI_STOP=0   no stop_background_process tool
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)

const off = (name) => process.env[name] === '0' || process.env[name] === 'false'

/** What the stock child-process path keeps of a command's output (its MAX_CHILD_PROCESS_BUFFER_SIZE). */
export const MAX_RESULT_BYTES = 16 * 1024 * 1024

let binding
function taskstream() {
  if (binding !== undefined) return binding
  if (off('TASKSTREAM_GEMINI')) {
    binding = null
    return binding
  }
  try {
    binding = require('./index.js')
  } catch (err) {
    binding = null
    process.stderr.write(
      `taskstream-gemini: taskstream did not load, Gemini CLI runs its own background jobs: ${err && err.message}\n`,
    )
  }
  return binding
}

/**
 * What to pass as taskstream's `env` (added to the inherited environment) so that the child sees
 * `childEnv`, the environment Gemini prepared for it. A variable Gemini leaves out (its sanitizer
 * drops secrets such as GEMINI_API_KEY) is overridden with an empty value, so its value never leaks.
 */
export function envDelta(childEnv, parentEnv = process.env) {
  const env = {}
  for (const [key, value] of Object.entries(childEnv)) {
    if (value === undefined || value === null) continue
    if (parentEnv[key] !== String(value)) env[key] = String(value)
  }
  for (const key of Object.keys(parentEnv)) {
    if (!(key in childEnv) || childEnv[key] === undefined) env[key] = ''
  }
  return env
}

/**
 * The last `maxBytes` of a file as text, trimmed as the stock path trims its result (`''` when it
 * cannot be read). A cut through a UTF-8 sequence at the start is dropped, not decoded as garbage.
 */
export function readOutput(file, maxBytes = MAX_RESULT_BYTES) {
  let fd
  try {
    fd = fs.openSync(file, 'r')
    const size = fs.fstatSync(fd).size
    const length = Math.min(size, maxBytes)
    const buf = Buffer.alloc(length)
    let read = 0
    while (read < length) {
      const n = fs.readSync(fd, buf, read, length - read, size - length + read)
      if (n === 0) break
      read += n
    }
    let start = 0
    if (length < size) while (start < read && (buf[start] & 0xc0) === 0x80) start++
    return buf.subarray(start, read).toString('utf8').trim()
  } catch {
    return ''
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** Running and recently ended taskstream jobs by pid, until Gemini has moved them to the background. */
const jobs = new Map()

/**
 * The command to give taskstream, or undefined when Gemini's prepared spawn is not a plain
 * `bash -c <command>` (a sandbox wraps it): then the stock path runs it.
 */
function plainBashCommand(prepared) {
  const { program, args } = prepared
  if (typeof program !== 'string' || !/(^|[\\/])bash$/.test(program)) return undefined
  if (!Array.isArray(args) || args.length !== 2 || args[0] !== '-c' || typeof args[1] !== 'string') return undefined
  return args[1]
}

function failedStart(error) {
  return {
    pid: undefined,
    result: Promise.resolve({
      error,
      rawOutput: Buffer.from(''),
      output: '',
      exitCode: 1,
      signal: null,
      aborted: false,
      pid: undefined,
      executionMethod: 'none',
    }),
  }
}

/**
 * ShellExecutionService.execute() for run_shell_command: the same arguments and the same
 * `{ pid, result }`. A background command runs on taskstream; anything else as stock.
 */
export async function execute(svc, lifecycle, isBackground, commandToExecute, cwd, onOutputEvent, abortSignal, usePty, cfg) {
  const stock = () => svc.execute(commandToExecute, cwd, onOutputEvent, abortSignal, usePty, cfg)
  const ts = isBackground && process.platform !== 'win32' ? taskstream() : null
  if (!ts) return stock()
  let prepared
  try {
    prepared = await svc.prepareExecution(commandToExecute, cwd, cfg, false, false)
  } catch {
    return stock()
  }
  const command = plainBashCommand(prepared)
  if (command === undefined) {
    prepared.cleanup?.()
    return stock()
  }
  const outputDir = path.join(svc.getLogDir(), 'taskstream')
  const registry = ts.getDefaultBackgroundShellRegistry()
  let handle
  try {
    fs.mkdirSync(outputDir, { recursive: true, mode: 0o700 })
    handle = ts.executeBackground({ command, cwd: prepared.cwd ?? cwd, outputDir, env: envDelta(prepared.env ?? {}), registry })
  } catch (err) {
    prepared.cleanup?.()
    return failedStart(err instanceof Error ? err : new Error(String(err)))
  }
  const pid = handle.pid
  if (pid === undefined) {
    const result = await handle.done
    prepared.cleanup?.()
    return failedStart(new Error(result.error ?? 'the command did not start'))
  }
  const sessionId = cfg?.sessionId ?? 'default'
  const job = { handle, onOutputEvent, sessionId, ended: false, backgrounded: false, exit: undefined }
  jobs.set(pid, job)
  const completionBehavior = cfg?.backgroundCompletionBehavior || 'silent'
  const cancel = () => {
    try {
      registry.requestCancel(handle.shellId)
    } catch {}
  }
  const attached = lifecycle.attachExecution(pid, {
    executionMethod: 'child_process',
    getBackgroundOutput: () => readOutput(handle.outputPath),
    getSubscriptionSnapshot: () => readOutput(handle.outputPath) || undefined,
    writeInput: () => {},
    kill: cancel,
    isActive: () => !job.ended,
    formatInjection: (output, error) => svc.formatShellBackgroundCompletion(pid, completionBehavior, output, error ?? undefined),
    completionBehavior,
  })
  const onAbort = () => {
    if (!job.ended) cancel()
  }
  abortSignal?.addEventListener('abort', onAbort, { once: true })
  handle.done.then((result) => {
    job.ended = true
    abortSignal?.removeEventListener('abort', onAbort)
    prepared.cleanup?.()
    const output = readOutput(handle.outputPath)
    const exitCode = result.exitCode ?? null
    const signal = result.signal ?? null
    job.exit = { exitCode, signal }
    // A job that ends before Gemini backgrounds it is a foreground result: its output arrives as
    // the stock path's data events would have brought it.
    if (!job.backgrounded && output) onOutputEvent({ type: 'data', chunk: output })
    markExited(svc, job, pid)
    onOutputEvent({ type: 'exit', exitCode, signal })
    lifecycle.completeWithResult(pid, {
      rawOutput: Buffer.from(''),
      output,
      exitCode,
      signal,
      error: result.error ? new Error(result.error) : null,
      aborted: Boolean(abortSignal?.aborted),
      pid,
      executionMethod: 'child_process',
    })
    if (job.backgrounded) jobs.delete(pid)
  })
  return { pid, result: attached.result }
}

/** Gemini's background history entry of a job that ended, as the stock exit handler writes it. */
function markExited(svc, job, pid) {
  const item = svc.backgroundProcessHistory.get(job.sessionId)?.get(pid)
  if (!item || !job.exit || item.status === 'exited') return
  item.status = 'exited'
  item.exitCode = job.exit.exitCode ?? undefined
  item.signal = job.exit.signal ?? undefined
  item.endTime = Date.now()
}

/**
 * Called by ShellExecutionService.background() after it recorded the job in its history: for a
 * taskstream job, gives the tool the output so far (its "Initial output"), puts taskstream's output
 * file at Gemini's log path, and returns true (Gemini opens no log stream of its own). False for
 * any other pid.
 */
export function backgroundLog(svc, pid) {
  const job = jobs.get(pid)
  if (!job) return false
  job.backgrounded = true
  const soFar = readOutput(job.handle.outputPath)
  if (soFar && !job.ended) job.onOutputEvent({ type: 'data', chunk: soFar })
  const logPath = svc.getLogFilePath(pid)
  try {
    fs.mkdirSync(path.dirname(logPath), { recursive: true, mode: 0o700 })
    // A log of an earlier process with the same pid is replaced (the stock path fails to open it
    // and logs nothing).
    fs.rmSync(logPath, { force: true })
    fs.linkSync(job.handle.outputPath, logPath)
  } catch (err) {
    process.stderr.write(`taskstream-gemini: could not link the log of pid ${pid}: ${err && err.message}\n`)
  }
  if (job.ended) {
    markExited(svc, job, pid)
    jobs.delete(pid)
  }
  return true
}

/** How long `stop_background_process` waits for a stopped job to end before it answers. */
export const STOP_WAIT_MS = 10_000

/** Resolves once `check()` is true (polled every 25 ms) or after `ms`; resolves with the last result. */
function waitUntil(check, ms) {
  return new Promise((resolve) => {
    const started = Date.now()
    const tick = () => {
      const ok = check()
      if (ok || Date.now() - started >= ms) resolve(ok)
      else setTimeout(tick, 25).unref?.()
    }
    tick()
  })
}

/** `(Exit Code: N)` / `(Signal: N)` as list_background_processes writes them. */
const endText = (item) =>
  `${item.exitCode !== undefined ? ` (Exit Code: ${item.exitCode})` : ''}${item.signal ? ` (Signal: ${item.signal})` : ''}`

/**
 * The `stop_background_process` tool, built on the CLI's own tool classes (`d`: the chunk's
 * BaseDeclarativeTool, BaseToolInvocation, Kind, ToolErrorType, ShellExecutionService). It stops a
 * background job of this session through Gemini's kill path (for a taskstream job: taskstream's
 * cancel, the whole tree), waits up to STOP_WAIT_MS for it to end, and says how it ended.
 */
export function stopToolClass(d) {
  const svc = d.ShellExecutionService
  class StopBackgroundProcessInvocation extends d.BaseToolInvocation {
    constructor(context, params, messageBus, toolName, toolDisplayName) {
      super(params, messageBus, toolName, toolDisplayName)
      this.context = context
    }
    getDescription() {
      return `Stopping background process ${this.params.pid}`
    }
    async execute() {
      const pid = this.params.pid
      const sessionId = this.context.config?.getSessionId?.() ?? this.context.getSessionId()
      const item = svc.backgroundProcessHistory.get(sessionId)?.get(pid)
      if (!item) {
        return {
          llmContent: `Access denied. Background process ID ${pid} not found in this session's history.`,
          returnDisplay: 'Access denied.',
          error: { message: `Background process history lookup failed for PID ${pid}`, type: d.ToolErrorType.EXECUTION_FAILED },
        }
      }
      if (item.status !== 'running') {
        const text = `Background process ${pid} had already exited${endText(item)}.`
        return { llmContent: text, returnDisplay: text }
      }
      await svc.kill(pid)
      const ended = await waitUntil(() => item.status !== 'running', STOP_WAIT_MS)
      const text = ended
        ? `Stopped background process ${pid}${endText(item)}.`
        : `Asked background process ${pid} to stop; it had not exited ${STOP_WAIT_MS / 1000} s later.`
      return { llmContent: text, returnDisplay: text }
    }
  }
  return class StopBackgroundProcessTool extends d.BaseDeclarativeTool {
    static Name = 'stop_background_process'
    constructor(context, messageBus) {
      super(
        StopBackgroundProcessTool.Name,
        'Stop Background Process',
        'Stops a background shell process started in this session, together with every process it started. Use list_background_processes to find its PID.',
        d.Kind.Execute,
        {
          type: 'object',
          properties: {
            pid: { type: 'integer', description: 'The process ID (PID) of the background process to stop.' },
          },
          required: ['pid'],
        },
        messageBus,
      )
      this.context = context
    }
    createInvocation(params, messageBus) {
      return new StopBackgroundProcessInvocation(this.context, params, messageBus, this.name)
    }
  }
}

/**
 * Called where Gemini registers its built-in tools (after read_background_output), with the
 * chunk's own classes in `d` and Gemini's `maybeRegister` (which honours `tools.core`). Adds
 * `stop_background_process` unless TASKSTREAM_GEMINI_STOP=0 (or TASKSTREAM_GEMINI=0).
 */
export function registerTools(d) {
  if (off('TASKSTREAM_GEMINI') || off('TASKSTREAM_GEMINI_STOP')) return
  const Stop = stopToolClass(d)
  d.maybeRegister(Stop, () => d.registry.registerTool(new Stop(d.config, d.messageBus)))
}
