// The non-interactive session (Qwen Code's nonInteractiveCli.ts, CONTRACT.md §1.8): it runs the
// model's tool calls, queues the notifications of monitors and background shells and hands them
// back to the model as the next message, waits for running monitors before it exits, and at the
// end calls `abortAll()` (default notify, so cancelled notifications go to the output) and the
// shell registry's `abortAll()`.
import type { MonitorNotificationMeta, MonitorTask, ShellNotificationMeta } from 'taskstream'

import type { CliContext, Tool, ToolCall, ToolResult } from './types.js'

export interface QueuedNotification {
  kind: 'monitor' | 'shell'
  taskId: string
  status: string
  displayText: string
  modelText: string
}

export interface ToolResponse {
  callId: string
  name: string
  result: ToolResult
}

/** What the model receives, one message at a time. */
export type ModelInput =
  | { kind: 'prompt'; text: string }
  | { kind: 'tool_results'; responses: ToolResponse[] }
  | { kind: 'notifications'; notifications: QueuedNotification[] }

/** Stands in for the LLM: given the latest input, the tool calls of its next turn (none ends it). */
export interface Model {
  next(input: ModelInput): ToolCall[] | Promise<ToolCall[]>
}

/** A message of the SDK stream (`--output-format stream-json`). */
export type SdkMessage =
  | { type: 'system'; subtype: 'task_started'; task_id: string; tool_use_id?: string; description: string }
  | { type: 'system'; subtype: 'task_notification'; task_id: string; status: string; text: string }
  | { type: 'result'; subtype: 'success'; num_turns: number }

/** A tool of any parameter type; the session passes it the model's arguments as they came. */
export type AnyTool = Tool<never>

export interface SessionOptions {
  context: CliContext
  tools: AnyTool[]
  model: Model
  /** Once the model is done, how long the session waits for the next notification while monitors
   * or shells still run, before it stops waiting and cancels them (default 10 min). */
  maxWaitMs?: number
  maxTurns?: number
}

export class NonInteractiveSession {
  /** Everything the model received, in order. */
  readonly modelInputs: ModelInput[] = []
  /** What the CLI prints for the user: tool displays and notification display texts. */
  readonly output: string[] = []
  readonly sdkMessages: SdkMessage[] = []
  /** Monitor events dropped because their monitor was no longer running. */
  readonly droppedEvents: QueuedNotification[] = []

  private readonly ctx: CliContext
  private readonly tools = new Map<string, AnyTool>()
  private readonly model: Model
  private readonly maxWaitMs: number
  private readonly maxTurns: number
  private readonly turnController = new AbortController()
  private queue: QueuedNotification[] = []
  private wake: (() => void) | null = null
  private turns = 0

  constructor(options: SessionOptions) {
    this.ctx = options.context
    for (const tool of options.tools) this.tools.set(tool.name, tool)
    this.model = options.model
    this.maxWaitMs = options.maxWaitMs ?? 600_000
    this.maxTurns = options.maxTurns ?? 100
  }

  /** Runs the prompt to the end and tears the background tasks down. */
  async run(prompt: string): Promise<void> {
    const { monitors, shells } = this.ctx
    monitors.setNotificationCallback((displayText: string, modelText: string, meta: MonitorNotificationMeta) =>
      this.onMonitorNotification(displayText, modelText, meta),
    )
    monitors.setRegisterCallback((entry: MonitorTask) => {
      this.sdkMessages.push({
        type: 'system',
        subtype: 'task_started',
        task_id: entry.monitorId,
        description: entry.description,
        ...(entry.toolUseId !== undefined ? { tool_use_id: entry.toolUseId } : {}),
      })
    })
    shells.setNotificationCallback((displayText: string, modelText: string, meta: ShellNotificationMeta) => {
      this.enqueue({ kind: 'shell', taskId: meta.shellId, status: meta.status, displayText, modelText })
    })
    try {
      await this.loop({ kind: 'prompt', text: prompt })
    } finally {
      this.finalize()
    }
  }

  /** The session's turn signal (what Ctrl+C aborts). Monitors and background shells ignore it. */
  get signal(): AbortSignal {
    return this.turnController.signal
  }

  private async loop(first: ModelInput): Promise<void> {
    let input: ModelInput | null = first
    while (input !== null && this.turns < this.maxTurns) {
      this.turns++
      this.modelInputs.push(input)
      const calls = await this.model.next(input)
      if (calls.length > 0) {
        const responses: ToolResponse[] = []
        for (const call of calls) responses.push(await this.runTool(call))
        input = { kind: 'tool_results', responses }
        continue
      }
      // The model ended its turn. Queued notifications become its next message; with nothing
      // queued, wait while monitors or shells still run (they will notify), then stop.
      input = null
      while (input === null) {
        const pending = this.takeQueue()
        if (pending.length > 0) {
          input = { kind: 'notifications', notifications: pending }
        } else if (!this.hasRunningTasks() || !(await this.waitForNotification(Date.now() + this.maxWaitMs))) {
          break
        }
      }
    }
  }

  private async runTool(call: ToolCall): Promise<ToolResponse> {
    const tool = this.tools.get(call.name)
    const result: ToolResult = tool
      ? await tool.execute(call.args as never, { signal: this.turnController.signal, callId: call.callId })
      : {
          llmContent: `Tool "${call.name}" not found in registry.`,
          returnDisplay: `Tool "${call.name}" not found.`,
          error: { type: 'tool_not_registered', message: `Tool "${call.name}" not found in registry.` },
        }
    this.output.push(result.returnDisplay)
    return { callId: call.callId, name: call.name, result }
  }

  /** Qwen's non-interactive loop: an event of a monitor that is no longer running is dropped. */
  private onMonitorNotification(displayText: string, modelText: string, meta: MonitorNotificationMeta): void {
    const item: QueuedNotification = { kind: 'monitor', taskId: meta.monitorId, status: meta.status, displayText, modelText }
    if (meta.status === 'running' && this.ctx.monitors.get(meta.monitorId)?.status !== 'running') {
      this.droppedEvents.push(item)
      return
    }
    this.enqueue(item)
  }

  private enqueue(item: QueuedNotification): void {
    this.queue.push(item)
    this.output.push(item.displayText)
    const wake = this.wake
    this.wake = null
    wake?.()
  }

  /** Takes the queue, dropping events of monitors stopped since they were queued. */
  private takeQueue(): QueuedNotification[] {
    const taken = this.queue
    this.queue = []
    return taken.filter((item) => {
      if (item.kind !== 'monitor' || item.status !== 'running') return true
      if (this.ctx.monitors.get(item.taskId)?.status !== 'cancelled') return true
      this.droppedEvents.push(item)
      return false
    })
  }

  /** Whether a monitor or shell may still notify (Qwen: `getRunning().length > 0`). */
  private hasRunningTasks(): boolean {
    return this.ctx.monitors.getRunning().length > 0 || this.ctx.shells.hasRunningEntries()
  }

  /** Resolves true on the next notification, false at the deadline. Its timer keeps Node alive
   * meanwhile: a native monitor does not. */
  private waitForNotification(deadline: number): Promise<boolean> {
    if (this.queue.length > 0) return Promise.resolve(true)
    const left = deadline - Date.now()
    if (left <= 0) return Promise.resolve(false)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null
        resolve(false)
      }, left)
      this.wake = () => {
        clearTimeout(timer)
        resolve(true)
      }
    })
  }

  /** `finalizeOneShotMonitors`: cancel what still runs, with notifications, and flush them to the
   * output (the model has finished); shells are shut down silently. */
  private finalize(): void {
    const { monitors, shells } = this.ctx
    this.turnController.abort()
    monitors.abortAll()
    shells.abortAll()
    for (const item of this.takeQueue()) {
      this.sdkMessages.push({ type: 'system', subtype: 'task_notification', task_id: item.taskId, status: item.status, text: item.modelText })
    }
    this.sdkMessages.push({ type: 'result', subtype: 'success', num_turns: this.turns })
    monitors.setNotificationCallback(undefined)
    monitors.setRegisterCallback(undefined)
    shells.setNotificationCallback(undefined)
    shells.setRegisterCallback(undefined)
  }
}
