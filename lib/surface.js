// The JavaScript layer of taskstream (ARCHITECTURE.md, "The JavaScript layer"): the parts of the
// public API that are plain JavaScript over the addon's native surface. What Rust could only build
// through napi calls one property at a time (promises, timers, a process-wide object) is written
// here; the checks of every option, all task state and every rule stay in the addon and its core.
//
// The loader (index.js, patched by scripts/patch-loader.mjs) calls `install` with the native
// binding once, before it exports anything, and exports what it returns. The Windows smoke test
// (scripts/windows/smoke.cjs), which requires the addon file itself, does the same.
'use strict'

const { installSides, sideOf } = require('./side.js')

/** The most bytes `readTaskOutputTail` reads (its `maxBytes` ceiling, core `MAX_TASK_OUTPUT_TAIL_BYTES`). */
const OUTPUT_TAIL_BYTES = 65536

/** The longest delay Node's timers accept (about 24.8 days): a keep-alive timer never fires. */
const KEEP_ALIVE_MS = 2147483647
const noop = () => {}

/** A timer that holds Node's event loop until it is cleared (the global `setInterval` of now). */
const keepAliveTimer = () => setInterval(noop, KEEP_ALIVE_MS)

/** A new promise with the `resolve` and `reject` that settle it. */
function deferred() {
  let resolve
  let reject
  const promise = new Promise((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/**
 * `waitFor(id, options)` of both registries (API.md §6.1) over the native `__waitFor`, which
 * checks the arguments, evaluates the conditions and settles the wait once (through the
 * registry's side, which keeps `settle` under the wait's id), and `__abortWait`. While the wait
 * is pending a timer keeps Node alive and an abort of `options.signal` ends it.
 */
function waitFor(id, options) {
  const { promise, resolve } = deferred()
  // Made before the wait exists, so a throwing `setInterval` leaves nothing pending.
  const keepAlive = keepAliveTimer()
  let settled = false
  let signal
  let onAbort
  const settle = (result) => {
    settled = true
    clearInterval(keepAlive)
    resolve(result)
    if (onAbort === undefined) return
    try {
      signal.removeEventListener('abort', onAbort)
    } catch {
      // A caller's signal that throws here keeps a listener that aborts a settled wait (a no-op).
    }
  }
  let side
  let wait
  try {
    side = sideOf(this)
    wait = side.beginWait(settle)
    this.__waitFor(id, options, wait)
  } catch (error) {
    if (wait !== undefined) side.dropWait(wait)
    clearInterval(keepAlive)
    throw error
  }
  // Settled already: the signal had fired, the task had settled, or a condition held at once.
  if (settled) return promise
  signal = options?.signal // an AbortSignal: the addon checked it
  if (signal !== undefined) {
    const listener = () => this.__abortWait(id, wait)
    try {
      signal.addEventListener('abort', listener, { once: true })
    } catch (error) {
      this.__abortWait(id, wait)
      throw error
    }
    onAbort = listener
  }
  return promise
}

/**
 * The JavaScript side of one background shell run (API.md §4), which the addon asks for before
 * it starts anything (`executeBackground()`, a `restart()`'s new run): the entry with its
 * `abortController`; the handle with `done`, and `unref()`/`ref()` over a timer that keeps Node
 * alive while the shell runs; the caller's `signal`, whose abort aborts the controller. A
 * throwing `AbortController` or `setInterval`, or a signal whose `addEventListener` throws, ends
 * the call while nothing runs. The addon fills in the rest and calls `settled(result)` once the
 * run settled (with no result: the start failed), which resolves `done` and lets the timer and
 * the listener go.
 */
function shellParts(signal) {
  const abortController = new AbortController()
  const { promise: done, resolve: resolveDone } = deferred()
  let keepAlive = keepAliveTimer()
  const onAbort = () => abortController.abort()
  if (signal !== undefined) {
    try {
      signal.addEventListener('abort', onAbort, { once: true })
    } catch (error) {
      clearInterval(keepAlive)
      throw error
    }
  }
  const handle = {
    done,
    unref: () => void keepAlive?.unref(),
    ref: () => void keepAlive?.ref(),
  }
  const settled = (result) => {
    clearInterval(keepAlive)
    keepAlive = undefined
    resolveDone(result)
    if (signal === undefined) return
    try {
      signal.removeEventListener('abort', onAbort)
    } catch {
      // A caller's signal that throws here keeps a listener that aborts a settled controller.
    }
  }
  return { entry: { abortController }, handle, settled }
}

/**
 * The JavaScript side of a native monitor or a recovered shell: the entry with its
 * `abortController` and, with `keepAlive` (API.md §6.6), `release()`, which lets go the timer that
 * holds Node's event loop while the task runs.
 */
function taskParts(keepAlive) {
  const entry = { abortController: new AbortController() }
  if (!keepAlive) return { entry }
  const timer = keepAliveTimer()
  return { entry, release: () => clearInterval(timer) }
}

const STATUSES = { Running: 'running', Completed: 'completed', Failed: 'failed', Cancelled: 'cancelled' }

/** The string enums the package exports as values (their types are in `index.d.ts`). */
const enums = () => ({
  MonitorStatus: { ...STATUSES },
  BackgroundShellStatus: { ...STATUSES },
  WaitReason: { Match: 'match', Quiet: 'quiet', Exit: 'exit', Timeout: 'timeout', Aborted: 'aborted', Port: 'port' },
})

/**
 * Installs what this layer makes on `binding` (the methods both registry classes share; the
 * functions the addon calls for the JavaScript side of each task) and
 * returns the exports it makes: `executeBackground` (the native start, plus `yieldMs`),
 * `getDefaultBackgroundShellRegistry`, and the string enums.
 */
function install(binding) {
  const { BackgroundShellRegistry, MonitorRegistry, readTaskOutputTail } = binding
  binding.__installLayer({ shellParts, taskParts, side: installSides(binding) })
  for (const Registry of [MonitorRegistry, BackgroundShellRegistry]) {
    Object.defineProperty(Registry.prototype, 'waitFor', { value: waitFor, writable: true, configurable: true })
  }
  const start = binding.__executeBackground
  let defaultRegistry

  /** The process-wide registry `executeBackground` uses when no `registry` is given. */
  function getDefaultBackgroundShellRegistry() {
    if (defaultRegistry === undefined) defaultRegistry = new BackgroundShellRegistry()
    return defaultRegistry
  }

  /** API.md §4: the handle at once, or with `yieldMs` a promise of it (§6.8). */
  function executeBackground(options) {
    // The addon checks `options` (an object first, then each field, `registry` among them).
    const given = typeof options === 'object' && options !== null ? options.registry : undefined
    const handle = start(options, given === undefined ? getDefaultBackgroundShellRegistry() : given)
    const yieldMs = options.yieldMs
    return yieldMs === undefined ? handle : yieldHandle(handle, yieldMs)
  }

  /**
   * `yieldMs` (API.md §6.8): the handle once `done` settles (then `foreground: true` and
   * `outputTail`, the cleaned tail of its output file, `''` when there is none) or `ms` after the
   * call (`foreground: false`: a background shell as without the option), whichever comes first.
   * The timer never keeps Node alive; the shell does, unless its handle is unref'd.
   */
  function yieldHandle(handle, ms) {
    return new Promise((resolve) => {
      let pending = true
      const finish = (foreground) => {
        if (!pending) return
        pending = false
        clearTimeout(timer)
        handle.foreground = foreground
        if (foreground) {
          const tail = readTaskOutputTail(handle.outputPath, OUTPUT_TAIL_BYTES)
          handle.outputTail = tail !== undefined && 'text' in tail ? tail.text : ''
        }
        resolve(handle)
      }
      const timer = setTimeout(() => finish(false), ms)
      timer.unref?.()
      handle.done.then(() => finish(true))
    })
  }

  return { executeBackground, getDefaultBackgroundShellRegistry, ...enums() }
}

module.exports = install
