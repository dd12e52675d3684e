// The `wait_for` tool: a bounded wait on a background task (a monitor or a background shell)
// instead of `sleep N` or an `until grep …; do sleep 1; done` loop, which the sleep guard
// refuses and which never ends when the line never comes. The condition is judged by taskstream
// in Rust on every line the task prints (lines the throttle drops included); the model gets one
// short result: which condition won, the matching line, the task's status and how long it took.
import type { WaitForOptions, WaitResult } from 'taskstream'

import { toolError, type CliContext, type Tool, type ToolInvocationContext, type ToolResult } from './types.js'

export const WAIT_FOR_TOOL_NAME = 'wait_for'

/** The longest wait the model may ask for: the turn must come back to the user. */
export const MAX_WAIT_FOR_TIMEOUT_MS = 600_000
const DEFAULT_WAIT_FOR_TIMEOUT_MS = 120_000

export interface WaitForParams {
  task_id: string
  /** A regular expression (Rust syntax) a line of the task's output must match. */
  pattern?: string
  /** Resolve once the task printed nothing for this long. */
  quiet_ms?: number
  /** Give up after this long (default 120000, at most 600000). */
  timeout_ms?: number
}

/** The function declaration the model sees. */
export const WAIT_FOR_SCHEMA = {
  name: WAIT_FOR_TOOL_NAME,
  description:
    'Waits, without polling, until a background task (monitor or background shell) prints a line matching `pattern`, ' +
    'goes quiet for `quiet_ms`, or ends; gives up after `timeout_ms`. Use it instead of sleep or until-loops. ' +
    'Returns which condition was met, the matching line, and the task status.',
  parameters: {
    type: 'object',
    properties: {
      task_id: { type: 'string', description: 'The id of a monitor (mon_…) or background shell (bg_…).' },
      pattern: { type: 'string', description: 'Regular expression (Rust regex syntax) matched against each output line.' },
      quiet_ms: { type: 'number', description: 'Resolve when the task printed nothing for this many milliseconds.' },
      timeout_ms: { type: 'number', description: `Give up after this many milliseconds (default ${DEFAULT_WAIT_FOR_TIMEOUT_MS}, max ${MAX_WAIT_FOR_TIMEOUT_MS}).` },
    },
    required: ['task_id'],
  },
} as const

const isPositiveInt = (n: unknown, max: number) => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= max

/** What the model reads for a finished wait. */
export function waitForText(taskId: string, r: WaitResult): string {
  const took = `${Math.round(r.elapsedMs)} ms`
  switch (r.reason) {
    case 'match':
      return `Task ${taskId} printed a matching line after ${took}: ${r.line}\nStatus: ${r.status}.`
    case 'quiet':
      return `Task ${taskId} has printed nothing for the requested quiet period (waited ${took}). Status: ${r.status}.`
    case 'exit':
      return `Task ${taskId} ended before the condition was met (after ${took}). Status: ${r.status}.`
    case 'timeout':
      return `Timed out after ${took} waiting on task ${taskId}. Status: ${r.status}. The task keeps running.`
    case 'aborted':
      return `The wait on task ${taskId} was cancelled after ${took}. Status: ${r.status}.`
    case 'port':
      return `Task ${taskId} is listening on port ${r.port} (after ${took}). Status: ${r.status}.`
  }
}

export class WaitForTool implements Tool<WaitForParams> {
  readonly name = WAIT_FOR_TOOL_NAME

  constructor(private readonly ctx: CliContext) {}

  validate(params: WaitForParams): string | null {
    if (typeof params.task_id !== 'string' || params.task_id.trim() === '') return 'task_id must be a non-empty string.'
    if (params.pattern !== undefined && typeof params.pattern !== 'string') return 'pattern must be a string.'
    if (params.quiet_ms !== undefined && !isPositiveInt(params.quiet_ms, 86_400_000)) return 'quiet_ms must be a positive integer.'
    if (params.timeout_ms !== undefined && !isPositiveInt(params.timeout_ms, MAX_WAIT_FOR_TIMEOUT_MS)) {
      return `timeout_ms must be an integer between 1 and ${MAX_WAIT_FOR_TIMEOUT_MS}.`
    }
    return null
  }

  async execute(params: WaitForParams, invocation: ToolInvocationContext): Promise<ToolResult> {
    const invalid = this.validate(params)
    if (invalid !== null) return toolError('invalid_tool_params', invalid)
    const id = params.task_id
    // The turn's signal: aborting the turn ends the wait, never the task.
    const options: WaitForOptions = {
      timeoutMs: params.timeout_ms ?? DEFAULT_WAIT_FOR_TIMEOUT_MS,
      signal: invocation.signal,
      ...(params.pattern !== undefined ? { match: params.pattern } : {}),
      ...(params.quiet_ms !== undefined ? { quietMs: params.quiet_ms } : {}),
    }
    let result: WaitResult
    try {
      if (this.ctx.monitors.get(id)) result = await this.ctx.monitors.waitFor(id, options)
      else if (this.ctx.shells.get(id)) result = await this.ctx.shells.waitFor(id, options)
      else return toolError('task_not_found', `No background task with id "${id}".`)
    } catch (error) {
      // A pattern that does not compile is a SyntaxError with the parser's message.
      if (error instanceof SyntaxError) return toolError('invalid_tool_params', `Invalid pattern: ${error.message}`)
      throw error
    }
    return { llmContent: waitForText(id, result), returnDisplay: `wait_for ${id}: ${result.reason}` }
  }
}
