// The shapes the CLI core passes around: tool calls from the model, tool results back to it, and
// the context every tool shares (the registries and the workspace).
import type { BackgroundShellRegistry, MonitorRegistry, PersistOptions } from 'taskstream'

/** Why a tool call failed, as the CLI's scheduler reports it (a subset of `ToolErrorType`). */
export type ToolErrorType = 'invalid_tool_params' | 'execution_failed' | 'tool_not_registered' | 'task_not_found'

/** What a tool returns: `llmContent` goes to the model, `returnDisplay` to the user. */
export interface ToolResult {
  llmContent: string
  returnDisplay: string
  error?: { type: ToolErrorType; message: string }
}

/** One function call of the model. */
export interface ToolCall {
  callId: string
  name: string
  args: Record<string, unknown>
}

export interface ToolInvocationContext {
  /** The turn's signal. Monitors and background shells never get it: aborting a turn does not stop them. */
  signal: AbortSignal
  callId: string
}

export interface Tool<P> {
  readonly name: string
  /** `null` when the parameters are valid, otherwise the message the model gets. */
  validate(params: P): string | null
  execute(params: P, ctx: ToolInvocationContext): ToolResult | Promise<ToolResult>
}

/** What the tools share: one monitor pool and one shell pool per CLI process. */
export interface CliContext {
  monitors: MonitorRegistry
  shells: BackgroundShellRegistry
  /** The directory commands run in unless a `directory` is given. */
  targetDir: string
  workspaceDirs: string[]
  userSkillsDirs: string[]
  /** Where background shells write `shell-<id>.output` and its `.status` sidecar. */
  backgroundOutputDir: string
  /** Set for a subagent's tools; absent for the top-level agent. */
  ownerAgentId?: string
  /** When set, the monitor tool and background shells run their tasks persisted (they outlive
   * this CLI process on a lease, and the next one takes them over with `recover()`). */
  persist?: PersistOptions
}

export function toolError(type: ToolErrorType, message: string, returnDisplay = message): ToolResult {
  return { llmContent: message, returnDisplay, error: { type, message } }
}
