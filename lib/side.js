// The JavaScript side of one registry (ARCHITECTURE.md, "The JavaScript layer"): what both
// `MonitorRegistry` and `BackgroundShellRegistry` keep of JavaScript values, written once. Each
// entry's object (the one `register()`, `start()` or `executeBackground()` handed out) with its
// `AbortController` (and, for a task the addon runs, its live getters and the listener on that
// controller), a fed monitor's idle timer, a `keepAlive` monitor's timer and the caller's `signal`
// a shell's `restart()` passes on; the callbacks (global, register, status change, and a
// monitor's per-agent ones) and their setters; the functions that settle pending `waitFor`
// promises and the promises of pending shell restarts.
//
// It holds no task state and decides nothing: the addon's hubs (core `monitor::hub`,
// `shell::hub`) decide what happens and in what order, and call these methods with plain data
// (an entry's fields as the registry has them, a notification's texts and `meta`). A callback
// that throws is reported and the transition goes on (CONTRACT.md §2.1 "Callback failures").
'use strict'

/** Where a registry keeps its side: a non-enumerable property of the registry object. */
const SIDE = Symbol('taskstream.registrySide')

class RegistrySide {
  /**
   * @param registry the registry object (held weakly: a side never keeps it alive)
   * @param warn the addon's logger, `(what, error)`
   */
  constructor(registry, warn) {
    this.registry = new WeakRef(registry)
    this.warn = warn
    /** id → { object, controller, generation, idleTimer, release, signal } */
    this.entries = new Map()
    this.generations = 0
    this.onNotification = undefined
    this.onRegister = undefined
    this.onStatusChange = undefined
    this.agentNotification = new Map()
    this.agentLifecycle = new Map()
    /** wait id → the function that settles its `waitFor` promise */
    this.waits = new Map()
    this.nextWait = 0
    /** shell id → the `resolve` and `reject` of the promise its pending `restart()` returned */
    this.restarts = new Map()
  }

  /** Calls `fn(...args)`; a throw is reported and swallowed. */
  call(what, fn, ...args) {
    try {
      fn(...args)
    } catch (error) {
      this.warn(what, error)
    }
  }

  /**
   * Keeps a new entry's object, its `abortController` (when it has one) and, for a `keepAlive`
   * monitor, the function that lets its timer go. Returns the entry's generation: a number no
   * earlier object of the registry had (a restarted run's object gets a new one).
   *
   * `counters` is given for a task the addon runs (a native monitor, a shell
   * `executeBackground()` started or `recover()` adopted), not for an entry fed from JavaScript.
   * Its object then reads the registry live: `ports` and `usage` (API.md §6.8, non-enumerable
   * getters, so copying or printing an entry never scans processes) and the named counters
   * (enumerable getters, 0 once the entry left); and an abort of its controller reaches the
   * registry's `__taskAborted(id, generation, current)`, `current` saying whether this object
   * is still the entry's: a shell's stops the run of that object (also once a reset removed it),
   * a monitor's only the current one (a restarted task's new run is not the old object's).
   */
  add(id, object, release, counters) {
    const controller = object.abortController
    const generation = ++this.generations
    if (counters != null) this.live(id, object, controller, generation, counters)
    this.entries.set(id, {
      object,
      controller: typeof controller === 'object' && controller !== null ? controller : undefined,
      generation,
      idleTimer: undefined,
      release: release ?? undefined,
    })
    return generation
  }

  /** The live getters and the abort listener of a task's object (see `add`). */
  live(id, object, controller, generation, counters) {
    const registry = this.registry
    const getter = (get, enumerable) => ({ get, enumerable, configurable: true })
    Object.defineProperty(object, 'ports', getter(() => registry.deref()?.__ports(id), false))
    Object.defineProperty(object, 'usage', getter(() => registry.deref()?.__usage(id), false))
    counters.forEach((key, index) => {
      Object.defineProperty(object, key, getter(() => registry.deref()?.__counters(id)?.[index] ?? 0, true))
    })
    const onAbort = () => registry.deref()?.__taskAborted(id, generation, this.generation(id) === generation)
    controller.signal.addEventListener('abort', onAbort, { once: true })
  }

  /** The object of entry `id`, or `undefined`. */
  object(id) {
    return this.entries.get(id)?.object
  }

  /** The generation of the object entry `id` names now, or `undefined`. */
  generation(id) {
    return this.entries.get(id)?.generation
  }

  /** Writes `fields` (an entry's fields as the registry has them) on entry `id`'s object; returns it. */
  sync(id, fields) {
    const entry = this.entries.get(id)
    if (entry === undefined) return undefined
    if (fields != null) {
      try {
        Object.assign(entry.object, fields)
      } catch (error) {
        this.warn('entry', error)
      }
    }
    return entry.object
  }

  /** A new entry: the register callback with its object. */
  registered(id, fields) {
    const object = this.sync(id, fields)
    if (object !== undefined && this.onRegister !== undefined) this.call('register', this.onRegister, object)
  }

  /**
   * The status-change callback with entry `id`'s object, or with nothing (after a reset, or when
   * there is no such object). An entry no longer `running` lets its timers go.
   */
  statusChanged(id, fields, running) {
    if (id != null && !running) this.stopTimers(id)
    const object = id == null ? undefined : this.sync(id, fields)
    const cb = this.onStatusChange
    if (cb === undefined) return
    if (object === undefined) this.call('statusChange', cb)
    else this.call('statusChange', cb, object)
  }

  /** Whether a global notification callback is installed. */
  hasNotification() {
    return this.onNotification !== undefined
  }

  /**
   * A notification of entry `id`: to the global callback, or with `agent` to that agent's
   * (dropped when it has none). Whether there was a callback to call.
   */
  notify(id, fields, agent, displayText, modelText, meta) {
    this.sync(id, fields)
    const cb = agent == null ? this.onNotification : this.agentNotification.get(agent)
    if (cb === undefined) return false
    this.call('notification', cb, displayText, modelText, meta)
    return true
  }

  /** Aborts entry `id`'s controller (its listeners run inside). */
  abort(id, fields) {
    this.sync(id, fields)
    const controller = this.entries.get(id)?.controller
    if (controller !== undefined) this.call('abort', () => controller.abort())
  }

  /** Whether entry `id`'s controller has been aborted. */
  aborted(id) {
    return this.entries.get(id)?.controller?.signal?.aborted === true
  }

  /** An owner agent's lifecycle callback (a silent cancel of its monitor). */
  wake(agent) {
    const cb = this.agentLifecycle.get(agent)
    if (cb !== undefined) this.call('lifecycle', cb)
  }

  /** These entries left the registry. */
  removed(ids) {
    for (const id of ids) {
      this.stopTimers(id)
      this.entries.delete(id)
    }
  }

  /**
   * Arms (again) a fed monitor's idle timer: the global `setTimeout` of now (so fake timers drive
   * it, as they drove the TypeScript registry's), unref'd. When it fires the registry's
   * `__idleTimeout(id)` settles the entry.
   */
  armIdle(id, ms) {
    const entry = this.entries.get(id)
    if (entry === undefined) return
    this.clearIdle(entry)
    try {
      const timer = setTimeout(() => {
        entry.idleTimer = undefined
        this.registry.deref()?.__idleTimeout(id)
      }, ms)
      if (typeof timer?.unref === 'function') timer.unref()
      entry.idleTimer = timer
    } catch (error) {
      this.warn('idle timer', error)
    }
  }

  clearIdle(entry) {
    if (entry.idleTimer === undefined) return
    const timer = entry.idleTimer
    entry.idleTimer = undefined
    this.call('idle timer', clearTimeout, timer)
  }

  /** Lets go entry `id`'s idle timer and keep-alive timer. */
  stopTimers(id) {
    const entry = this.entries.get(id)
    if (entry === undefined) return
    this.clearIdle(entry)
    const release = entry.release
    entry.release = undefined
    if (release !== undefined) this.call('keepAlive', release)
  }

  /**
   * Keeps the caller's `signal` of the start of entry `id` for its `restart()` (API.md §6.8),
   * which passes it on to the new run; it goes with the entry.
   */
  keepSignal(id, signal) {
    const entry = this.entries.get(id)
    if (entry !== undefined) entry.signal = signal
  }

  /** The caller's `signal` kept for entry `id`, or `undefined`. */
  signal(id) {
    return this.entries.get(id)?.signal
  }

  /** A shell's `restart(id)` begins (one at a time per id: the addon refuses a second): its promise. */
  beginRestart(id) {
    return new Promise((resolve, reject) => this.restarts.set(id, { resolve, reject }))
  }

  /** The restart of `id` ends: its promise resolves with the new run's `handle`, or rejects with `error`. */
  endRestart(id, handle, error) {
    const pending = this.restarts.get(id)
    if (pending === undefined) return
    this.restarts.delete(id)
    if (error === undefined) pending.resolve(handle)
    else pending.reject(error)
  }

  /** A new pending wait, settled through `settle(result)`; its id. */
  beginWait(settle) {
    const wait = ++this.nextWait
    this.waits.set(wait, settle)
    return wait
  }

  /** Settles wait `wait` with its `WaitResult` (once: later calls do nothing). */
  resolveWait(wait, result) {
    const settle = this.waits.get(wait)
    if (settle === undefined) return
    this.waits.delete(wait)
    this.call('waitFor', settle, result)
  }

  /** A wait that never began (its `waitFor` threw). */
  dropWait(wait) {
    this.waits.delete(wait)
  }

  /** Whether a wait is pending. */
  hasWaits() {
    return this.waits.size > 0
  }

  /** A monitor registry's reset: the per-agent callbacks go. */
  clearAgents() {
    this.agentNotification.clear()
    this.agentLifecycle.clear()
  }
}

/**
 * The setters of the callbacks, for `Registry.prototype` (`this` is a registry). `check` is the
 * addon's `__checkArg(value, name, kind)`, which throws the `TypeError` a bad argument gets.
 */
function setters(check) {
  const side = (registry) => registry[SIDE]
  const optionalCallback = (cb) => {
    check(cb, 'cb', 'optionalFunction')
    return cb ?? undefined
  }
  const agentSetter = (map) =>
    function (agentId, cb) {
      check(agentId, 'agentId', 'string')
      const f = optionalCallback(cb)
      const callbacks = side(this)[map]
      if (f === undefined) callbacks.delete(agentId)
      else callbacks.set(agentId, f)
    }
  return {
    /** Global notification callback (entries without an owner); `undefined` clears it. */
    setNotificationCallback(cb) {
      side(this).onNotification = optionalCallback(cb)
    },
    /** Called with each new entry that has no owner; `undefined` clears it. */
    setRegisterCallback(cb) {
      side(this).onRegister = optionalCallback(cb)
    },
    /** Called on register, on every settle, and (with no argument) on a reset. */
    setStatusChangeCallback(cb) {
      side(this).onStatusChange = optionalCallback(cb)
    },
    /** Clears the status-change callback only if `cb` is the one installed. */
    clearStatusChangeCallback(cb) {
      check(cb, 'cb', 'function')
      const s = side(this)
      if (s.onStatusChange === cb) s.onStatusChange = undefined
    },
    setAgentNotificationCallback: agentSetter('agentNotification'),
    setAgentLifecycleCallback: agentSetter('agentLifecycle'),
  }
}

/**
 * Installs the callback setters on both registry classes and returns `side(registry)`, which the
 * addon calls from each registry's constructor: it makes the registry's side and keeps it on the
 * registry object.
 */
function installSides(binding) {
  const { MonitorRegistry, BackgroundShellRegistry } = binding
  const warn = (what, error) => binding.__warn(what, String(error?.stack ?? error))
  const all = setters(binding.__checkArg)
  const shared = ['setNotificationCallback', 'setRegisterCallback', 'setStatusChangeCallback', 'clearStatusChangeCallback']
  const define = (Registry, name, value) =>
    Object.defineProperty(Registry.prototype, name, { value, writable: true, configurable: true })
  for (const name of shared) define(MonitorRegistry, name, all[name])
  define(MonitorRegistry, 'setAgentNotificationCallback', all.setAgentNotificationCallback)
  define(MonitorRegistry, 'setAgentLifecycleCallback', all.setAgentLifecycleCallback)
  for (const name of shared) define(BackgroundShellRegistry, name, all[name])
  // A shell registry replays the terminal entries never notified once a callback is installed.
  define(BackgroundShellRegistry, 'setNotificationCallback', function (cb) {
    all.setNotificationCallback.call(this, cb)
    if (this[SIDE].onNotification !== undefined) this.__replayNotifications()
  })
  return (registry) => {
    const side = new RegistrySide(registry, warn)
    Object.defineProperty(registry, SIDE, { value: side })
    return side
  }
}

/** The side of `registry`. */
const sideOf = (registry) => registry[SIDE]

module.exports = { installSides, sideOf }
