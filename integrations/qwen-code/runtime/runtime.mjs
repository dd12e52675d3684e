// taskstream-qwen runtime: copied by `taskstream-qwen patch` into <qwen-code>/taskstream-qwen/runtime.mjs
// and imported by the patched chunks of @qwen-code/qwen-code. Removed by `taskstream-qwen unpatch`.
//
// It gives the CLI taskstream's registries (the fed drop-in) and runs the two process paths natively:
// the monitor tool through MonitorRegistry.start() and `run_shell_command` with is_background through
// executeBackground(). Whenever the native path cannot do what the stock path would (a sandbox, Windows,
// taskstream failing to load, TASKSTREAM_QWEN=0), the CLI's own code runs unchanged.
//
// Switches (environment of the `qwen` process):
//   TASKSTREAM_QWEN=0          the CLI's own registries and spawn paths, as if unpatched
//   TASKSTREAM_QWEN_NATIVE=0   taskstream's registries, fed by the CLI's own spawn paths (the drop-in only)
//   TASKSTREAM_QWEN_SIGNAL=0   native monitors without the recommended signal setting (the stock throttle)
// Task control for native monitors and background shells (taskstream API.md §6.8), off unless set:
//   TASKSTREAM_QWEN_MEMORY_LIMIT=2G      limits.memoryBytes (bytes, or K/M/G/T: powers of 1024)
//   TASKSTREAM_QWEN_CPU_PERCENT=200      limits.cpuPercent (of one core)
//   TASKSTREAM_QWEN_MAX_PROCESSES=512    limits.maxProcesses
//   TASKSTREAM_QWEN_TIMEOUT=30m          timeoutMs (ms, or s/m/h)
import { createRequire } from 'node:module'

import { envDelta, startErrorText, taskControlOptions as sharedTaskControl } from './common.mjs'

export { envDelta }

const require = createRequire(import.meta.url)

const off = (name) => process.env[name] === '0' || process.env[name] === 'false'

let binding
let loadError
function taskstream() {
  if (binding !== undefined) return binding
  if (off('TASKSTREAM_QWEN')) {
    binding = null
    return binding
  }
  try {
    binding = require('./index.js')
  } catch (err) {
    binding = null
    loadError = err
    process.stderr.write(
      `taskstream-qwen: taskstream did not load, Qwen Code runs its own background-task code: ${err && err.message}\n`,
    )
  }
  return binding
}

/** Why taskstream is not in use, or undefined when it is. */
export function unavailableReason() {
  if (taskstream()) return undefined
  return off('TASKSTREAM_QWEN') ? 'TASKSTREAM_QWEN=0' : `taskstream did not load: ${loadError && loadError.message}`
}

// Step A: the Config field initialisers call these with the CLI's own classes as fallbacks.
export function createMonitorRegistry(StockMonitorRegistry) {
  const ts = taskstream()
  return ts ? new ts.MonitorRegistry() : new StockMonitorRegistry()
}

export function createBackgroundShellRegistry(StockBackgroundShellRegistry) {
  const ts = taskstream()
  return ts ? new ts.BackgroundShellRegistry() : new StockBackgroundShellRegistry()
}

function nativeAllowed(config, registry, ctorName) {
  const ts = taskstream()
  if (!ts || off('TASKSTREAM_QWEN_NATIVE')) return false
  if (process.platform === 'win32') return false // the CLI runs PowerShell/cmd there; taskstream runs bash
  if (config.getShellExecutionSandbox?.()) return false // the sandbox runtime spawns; keep it
  const env = config.getExecutionEnvironment?.()
  if (env && env.constructor && /ssh/i.test(env.constructor.name)) return false // commands run remotely
  return registry instanceof ts[ctorName]
}

export function nativeMonitor(config) {
  return nativeAllowed(config, config.getMonitorRegistry(), 'MonitorRegistry')
}

export function nativeShell(config) {
  return nativeAllowed(config, config.getBackgroundShellRegistry(), 'BackgroundShellRegistry')
}

/**
 * The signal options native monitors start with: the addon's `RECOMMENDED_SIGNAL` (taskstream
 * API.md §6.7), none when TASKSTREAM_QWEN_SIGNAL=0. `addon` is the loaded taskstream.
 */
export function signalOptions(addon = taskstream()) {
  return off('TASKSTREAM_QWEN_SIGNAL') || !addon ? {} : { ...addon.RECOMMENDED_SIGNAL }
}

/**
 * The task control the user set in the environment (see the top of this file): `{ limits?,
 * timeoutMs? }` to spread into start() and executeBackground(), `{}` unless set. Parsed by the
 * integrations' shared code (common.mjs): a value that is not a positive whole amount is ignored,
 * with one line on stderr; the ranges are taskstream's (a value out of range fails the task's start
 * with taskstream's RangeError, as limits the host cannot enforce fail it with taskstream's Error,
 * and the model reads why, with the variable named).
 */
export function taskControlOptions(env = process.env) {
  return sharedTaskControl('TASKSTREAM_QWEN', env, 'taskstream-qwen')
}

const errorText = (err) => startErrorText(err, 'TASKSTREAM_QWEN')

/**
 * The monitor tool's execute() on taskstream's start(). `inv` is the MonitorToolInvocation; `h` holds
 * the chunk's own helpers and constants, so texts and limits stay the CLI's.
 */
export function executeMonitor(inv, h) {
  const params = inv.params
  const config = inv.config
  const normalized = h.normalizeMonitorCommand(params.command)
  const command = normalized.spawnCommand
  const description = h.sanitizeMonitorLine(params.description || command)
  const displayDescription = h.truncateDisplayDescription(description)
  const maxEvents = Math.min(params.max_events ?? h.DEFAULT_MAX_EVENTS, h.MAX_MAX_EVENTS)
  const idleTimeoutMs = Math.min(params.idle_timeout_ms ?? h.DEFAULT_IDLE_TIMEOUT_MS, h.MAX_IDLE_TIMEOUT_MS)
  const registry = config.getMonitorRegistry()
  const ownerAgentId = h.getCurrentAgentId() ?? undefined
  if (registry.getRunning().length >= h.MAX_CONCURRENT_MONITORS) {
    return {
      llmContent: `Cannot start monitor: maximum concurrent monitors (${h.MAX_CONCURRENT_MONITORS}) reached. Stop an existing monitor first.`,
      returnDisplay: `Monitor rejected: too many concurrent monitors.`,
    }
  }
  let entry
  try {
    entry = registry.start({
      command,
      description,
      maxEvents,
      idleTimeoutMs,
      cwd: params.directory || config.getTargetDir(),
      env: envDelta(h.childEnv),
      ...(inv.callId ? { toolUseId: inv.callId } : {}),
      ...(ownerAgentId ? { ownerAgentId } : {}),
      ...signalOptions(),
      ...taskControlOptions(),
    })
  } catch (err) {
    return {
      llmContent: `Monitor failed to start: ${errorText(err)}`,
      returnDisplay: `Monitor failed: ${errorText(err)}`,
    }
  }
  if (entry.status === 'failed' && entry.end && entry.end.reason === 'spawn-failed') {
    const message = entry.error || entry.end.detail || 'spawn failed'
    return {
      llmContent: `Monitor failed to start: ${message}`,
      returnDisplay: `Monitor failed: ${message}`,
    }
  }
  const monitorId = entry.id
  return {
    llmContent: `Monitor started.
id: ${monitorId}
command: ${command}
description: ${description}
max_events: ${maxEvents}
idle_timeout: ${idleTimeoutMs}ms
Events will be delivered as notifications. The monitor auto-stops after ${maxEvents} events or ${idleTimeoutMs}ms of silence.
To inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter \u2014 detail view + live updates).`,
    returnDisplay: `Monitor started: ${displayDescription} (${monitorId})`,
  }
}

/**
 * `run_shell_command` with is_background on taskstream's executeBackground(): the output file, its
 * status sidecar and the registry entry are taskstream's; the text the model gets is the CLI's.
 */
export function executeBackgroundShell(config, o) {
  const ts = taskstream()
  const registry = config.getBackgroundShellRegistry()
  let handle
  try {
    handle = ts.executeBackground({
      command: o.command,
      cwd: o.cwd,
      outputDir: o.outputDir,
      registry,
      env: envDelta(o.childEnv),
      ...taskControlOptions(),
    })
  } catch (err) {
    // Only task control the user set can make a start throw (limits this host cannot enforce).
    return {
      llmContent: `Background shell failed to start: ${errorText(err)}`,
      returnDisplay: `Background shell failed: ${errorText(err)}`,
    }
  }
  const pid = handle.pid
  const outputPath = handle.outputPath
  const pidLine = pid !== undefined ? `pid: ${pid}\n` : ''
  return {
    llmContent:
      `Background shell started.
id: ${handle.shellId}
` +
      pidLine +
      `output file: ${outputPath}
${o.statusFileGuidance(outputPath)}
To inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter \u2014 detail view + live updates). Read the output file directly to view the captured output.`,
    returnDisplay: `Background shell ${handle.shellId} started${pid !== undefined ? ` (pid ${pid})` : ''}.`,
  }
}
