// The `task_stop` tool (CONTRACT.md §1.8): a monitor is cancelled with `cancel(id)`, which is
// synchronous and user-visible (its cancelled notification goes out inside the call); a
// background shell gets `requestCancel(id)`, and the shell's own settle path records the outcome
// and sends its notification once the process is gone.
import { toolError, type CliContext, type Tool, type ToolResult } from './types.js'

export const TASK_STOP_TOOL_NAME = 'task_stop'

export interface TaskStopParams {
  task_id: string
}

export class TaskStopTool implements Tool<TaskStopParams> {
  readonly name = TASK_STOP_TOOL_NAME

  constructor(private readonly ctx: CliContext) {}

  validate(params: TaskStopParams): string | null {
    return typeof params.task_id === 'string' && params.task_id.trim() !== '' ? null : 'task_id must be a non-empty string.'
  }

  execute(params: TaskStopParams): ToolResult {
    const invalid = this.validate(params)
    if (invalid !== null) return toolError('invalid_tool_params', invalid)
    const id = params.task_id
    const monitor = this.ctx.monitors.get(id)
    if (monitor) {
      if (monitor.status !== 'running') {
        return toolError('execution_failed', `Task ${id} is not running (status: ${monitor.status}).`)
      }
      this.ctx.monitors.cancel(id)
      return {
        llmContent: `Monitor ${id} stopped (${monitor.eventCount} events delivered).`,
        returnDisplay: `Stopped monitor ${id}.`,
      }
    }
    const shell = this.ctx.shells.get(id)
    if (shell) {
      if (shell.status !== 'running') {
        return toolError('execution_failed', `Task ${id} is not running (status: ${shell.status}).`)
      }
      this.ctx.shells.requestCancel(id)
      return {
        llmContent: `Cancellation requested for background shell ${id}. Its final status arrives as a notification.`,
        returnDisplay: `Stopping background shell ${id}.`,
      }
    }
    return toolError('task_not_found', `No background task with id "${id}".`)
  }
}
