// The `run_shell_command` tool (Qwen Code's tools/shell.ts), on taskstream's guards and
// background shells. Validation follows CONTRACT.md §2.16 in order; the foreground path refuses a
// blocked sleep with `blockedSleepMessage` and runs a short command synchronously; the background
// path hands the command to `executeBackground`, whose settle path reports through the shell
// registry's notification callback.
import { spawnSync } from 'node:child_process'
import { isAbsolute } from 'node:path'

import {
  blockedSleepMessage,
  detectBlockedSleepPattern,
  executeBackground,
  hasTopLevelTrailingBackgroundOperator,
  stripAnsi,
  stripShellWrapper,
  trimTrailingShellComment,
  type BackgroundShellHandle,
} from 'taskstream'

import { TASKS_INSPECT_HINT } from './monitorTool.js'
import { toolError, type CliContext, type Tool, type ToolInvocationContext, type ToolResult } from './types.js'
import { isWithinAny } from './workspace.js'

export const SHELL_TOOL_NAME = 'run_shell_command'
export const DEFAULT_FOREGROUND_TIMEOUT_MS = 120_000
export const MAX_TIMEOUT_MS = 600_000

export interface ShellToolParams {
  command: string
  is_background?: boolean
  /** Foreground only, in milliseconds. */
  timeout?: number
  directory?: string
  description?: string
}

export interface ShellToolOptions {
  /** Reject a trailing bare `&` on background commands instead of letting taskstream strip it. */
  rejectTrailingBackgroundAmp?: boolean
}

/** The first command word, after a shell wrapper, comments and `NAME=value` prefixes; `null` if none. */
export function commandRoot(command: string): string | null {
  const script = trimTrailingShellComment(stripShellWrapper(command)).trim()
  const tokens = script.split(/\s+/).filter(Boolean)
  let i = 0
  while (i < tokens.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(tokens[i] ?? '')) i++
  const word = /^[^\s;&|()<>`$'"{}]+/.exec(tokens[i] ?? '')?.[0]
  return word ? (word.split('/').pop() ?? null) : null
}

export class ShellTool implements Tool<ShellToolParams> {
  readonly name = SHELL_TOOL_NAME
  /** Background shells started by this tool, by id (their `done` promises settle with the shell). */
  readonly backgroundHandles = new Map<string, BackgroundShellHandle>()

  constructor(
    private readonly ctx: CliContext,
    private readonly options: ShellToolOptions = {},
  ) {}

  validate(params: ShellToolParams): string | null {
    const { command } = params
    if (typeof command !== 'string' || !command.trim()) return 'Command cannot be empty.'
    if (
      this.options.rejectTrailingBackgroundAmp &&
      params.is_background &&
      hasTopLevelTrailingBackgroundOperator(stripShellWrapper(command))
    ) {
      return 'Background shell commands must not end with a bare "&". Remove the trailing "&" and rely on is_background: true instead.'
    }
    if (commandRoot(command) === null) return 'Could not identify command root to obtain permission from user.'
    if (params.timeout !== undefined) {
      if (typeof params.timeout !== 'number') return 'params/timeout must be number'
      if (!Number.isInteger(params.timeout)) return 'Timeout must be an integer number of milliseconds.'
      if (params.timeout <= 0) return 'Timeout must be a positive number.'
      if (params.timeout > MAX_TIMEOUT_MS) return `Timeout cannot exceed ${MAX_TIMEOUT_MS}ms (10 minutes).`
    }
    if (params.directory !== undefined) {
      if (!isAbsolute(params.directory)) return 'Directory must be an absolute path.'
      if (isWithinAny(params.directory, this.ctx.userSkillsDirs)) {
        return 'Explicitly running shell commands from within the user skills directory is not allowed. Please use absolute paths for command parameter instead.'
      }
      if (!isWithinAny(params.directory, this.ctx.workspaceDirs)) {
        return `Directory '${params.directory}' is not within any of the registered workspace directories.`
      }
    }
    // The sleep guard runs for foreground commands only; a background sleep is fine.
    if (!params.is_background && detectBlockedSleepPattern(command) !== null) return blockedSleepMessage(command)
    return null
  }

  execute(params: ShellToolParams, { signal }: ToolInvocationContext): ToolResult {
    const invalid = this.validate(params)
    if (invalid !== null) return toolError('invalid_tool_params', invalid)
    if (signal.aborted) return { llmContent: 'Command was cancelled by user before it could start.', returnDisplay: 'Command cancelled by user.' }
    const cwd = params.directory ?? this.ctx.targetDir
    return params.is_background ? this.background(params.command, cwd) : this.foreground(params, cwd)
  }

  private foreground(params: ShellToolParams, cwd: string): ToolResult {
    const r = spawnSync('bash', ['-c', params.command], {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: params.timeout ?? DEFAULT_FOREGROUND_TIMEOUT_MS,
      env: { ...process.env, QWEN_CODE: '1', PAGER: 'cat' },
    })
    const output = stripAnsi(`${r.stdout ?? ''}${r.stderr ?? ''}`).trimEnd()
    const error = r.error ? r.error.message : '(none)'
    const llmContent = [
      `Command: ${params.command}`,
      `Directory: ${params.directory ?? '(root)'}`,
      `Output: ${output || '(empty)'}`,
      `Error: ${error}`,
      `Exit Code: ${r.status ?? '(none)'}`,
      `Signal: ${r.signal ?? '(none)'}`,
    ].join('\n')
    const returnDisplay = output || (r.status === 0 ? '(empty)' : `Command exited with code ${r.status ?? r.signal}`)
    return { llmContent, returnDisplay }
  }

  private background(command: string, cwd: string): ToolResult {
    let handle: BackgroundShellHandle
    try {
      handle = executeBackground({
        command,
        cwd,
        outputDir: this.ctx.backgroundOutputDir,
        registry: this.ctx.shells,
        env: { QWEN_CODE: '1' },
        // Persisted: the shell outlives this CLI process; the next one adopts it (cli.recover()).
        ...(this.ctx.persist !== undefined ? { persist: this.ctx.persist } : {}),
      })
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e)
      return toolError('execution_failed', `Failed to start background shell: ${message}`)
    }
    this.backgroundHandles.set(handle.shellId, handle)
    void handle.done.finally(() => this.backgroundHandles.delete(handle.shellId))

    const pidLine = handle.pid !== undefined ? `pid: ${handle.pid}\n` : ''
    return {
      llmContent:
        `Background shell started.\nid: ${handle.shellId}\n${pidLine}output file: ${handle.outputPath}\n` +
        `${TASKS_INSPECT_HINT} Read the output file directly to view the captured output.`,
      returnDisplay:
        handle.pid !== undefined
          ? `Background shell ${handle.shellId} started (pid ${handle.pid}).`
          : `Background shell ${handle.shellId} started.`,
    }
  }
}
