// The `monitor` tool (Qwen Code's tools/monitor.ts, CONTRACT.md §2.12), on taskstream's native
// monitors: the parameters are checked with `validateMonitorParams`, the cap is pre-checked with
// `getRunning()`, and `registry.start()` spawns and streams the command from Rust. Events come
// back through the registry's notification callback (see session.ts), not through this result.
import { RECOMMENDED_SIGNAL, normalizeMonitorCommand, validateMonitorParams, type MonitorStartOptions, type MonitorToolParams } from 'taskstream'

import { toolError, type CliContext, type Tool, type ToolInvocationContext, type ToolResult } from './types.js'

export const MONITOR_TOOL_NAME = 'monitor'
export const MAX_CONCURRENT_MONITORS = 16
export const DEFAULT_MAX_EVENTS = 1000
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000
export const MAX_DISPLAY_DESCRIPTION_LENGTH = 80
export const TASKS_INSPECT_HINT =
  'To inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter — detail view + live updates).'

/**
 * taskstream's recommended setting for agent CLIs (API.md §6.7), the addon's `RECOMMENDED_SIGNAL`:
 * lines that look important are never dropped by the throttle and bring the lines around them,
 * a window of a second carries them with at most one ordinary line, and what was dropped is
 * summarised by template. Off by default here, so the drop-in texts stay Qwen's; `createCli({
 * monitorSignal: RECOMMENDED_MONITOR_SIGNAL })` turns it on.
 */
export const RECOMMENDED_MONITOR_SIGNAL: MonitorSignalOptions = RECOMMENDED_SIGNAL

export type MonitorSignalOptions = Pick<
  MonitorStartOptions,
  'batchMs' | 'maxBatchLines' | 'important' | 'digest' | 'sampleLines' | 'contextBefore' | 'contextAfter'
>

/** The tool display's description: at most 80 characters (79 + `…`). */
export function displayDescription(description: string): string {
  return description.length <= MAX_DISPLAY_DESCRIPTION_LENGTH
    ? description
    : `${description.slice(0, MAX_DISPLAY_DESCRIPTION_LENGTH - 1)}…`
}

export class MonitorTool implements Tool<MonitorToolParams> {
  readonly name = MONITOR_TOOL_NAME

  constructor(
    private readonly ctx: CliContext,
    private readonly maxConcurrent = MAX_CONCURRENT_MONITORS,
    private readonly signal: MonitorSignalOptions = {},
  ) {}

  validate(params: MonitorToolParams): string | null {
    return validateMonitorParams(params, { workspaceDirs: this.ctx.workspaceDirs, userSkillsDirs: this.ctx.userSkillsDirs })
  }

  /** What the confirmation prompt and the tool header show. */
  getDescription(params: MonitorToolParams): string {
    return `Monitor: ${displayDescription(params.description || normalizeMonitorCommand(params.command).spawnCommand)}`
  }

  execute(params: MonitorToolParams, { signal, callId }: ToolInvocationContext): ToolResult {
    const invalid = this.validate(params)
    if (invalid !== null) return toolError('invalid_tool_params', invalid)
    if (signal.aborted) {
      return { llmContent: 'Monitor was cancelled before it could start.', returnDisplay: 'Monitor cancelled.' }
    }
    const { monitors } = this.ctx
    if (monitors.getRunning().length >= this.maxConcurrent) {
      return toolError(
        'execution_failed',
        `Cannot start monitor: maximum concurrent monitors (${this.maxConcurrent}) reached. Stop an existing monitor first.`,
      )
    }

    // The monitor gets its own abort controller (start() creates it): the turn's signal is not
    // passed on, so Ctrl+C on the turn does not stop a monitor.
    const options: MonitorStartOptions = {
      command: params.command,
      cwd: params.directory ?? this.ctx.targetDir,
      maxEvents: params.max_events ?? DEFAULT_MAX_EVENTS,
      idleTimeoutMs: params.idle_timeout_ms ?? DEFAULT_IDLE_TIMEOUT_MS,
      toolUseId: callId,
      env: { QWEN_CODE: '1' },
      ...this.signal,
    }
    if (params.description) options.description = params.description
    if (this.ctx.ownerAgentId !== undefined) options.ownerAgentId = this.ctx.ownerAgentId
    // Persisted: the monitor outlives this CLI process; the next one adopts it (cli.recover()).
    if (this.ctx.persist !== undefined) options.persist = this.ctx.persist

    let entry
    try {
      entry = monitors.start(options)
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e)
      return { llmContent: `Monitor failed to start: ${message}`, returnDisplay: `Monitor failed: ${message}` }
    }
    if (entry.status === 'failed' && entry.pid === undefined) {
      // The spawn failed: the entry exists (and its failed notification went out), no process does.
      const message = entry.error ?? 'unknown error'
      return { llmContent: `Monitor failed to start: ${message}`, returnDisplay: `Monitor failed: ${message}` }
    }

    return {
      llmContent: [
        'Monitor started.',
        `id: ${entry.id}`,
        `command: ${entry.command}`,
        `description: ${entry.description}`,
        `max_events: ${entry.maxEvents}`,
        `idle_timeout: ${entry.idleTimeoutMs}ms`,
        `Events will be delivered as notifications. The monitor auto-stops after ${entry.maxEvents} events or ${entry.idleTimeoutMs}ms of silence.`,
        TASKS_INSPECT_HINT,
      ].join('\n'),
      returnDisplay: `Monitor started: ${displayDescription(entry.description)} (${entry.id})`,
    }
  }
}
