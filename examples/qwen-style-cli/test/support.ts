// Test helpers: a throwaway project with the fixture scripts, a scripted model, and readers for
// what the session recorded.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createCli, type Cli, type CliOptions } from '../src/cli.js'
import type { Model, ModelInput, QueuedNotification, ToolResponse } from '../src/session.js'
import type { ToolCall } from '../src/types.js'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))

export interface Project {
  dir: string
  tempDir: string
  cli: Cli
  cleanup(): void
}

/** A project directory with the fixtures in `scripts/`, and a CLI whose workspace it is. */
export function project(options: Partial<CliOptions> = {}): Project {
  const dir = mkdtempSync(join(tmpdir(), 'qwen-style-project-'))
  const tempDir = mkdtempSync(join(tmpdir(), 'qwen-style-tmp-'))
  cpSync(fixtures, join(dir, 'scripts'), { recursive: true })
  const cli = createCli({ targetDir: dir, projectTempDir: tempDir, conversationId: 'conv-1', ...options })
  return {
    dir,
    tempDir,
    cli,
    cleanup() {
      cli.context.monitors.abortAll({ notify: false })
      cli.context.shells.abortAll()
      rmSync(dir, { recursive: true, force: true })
      rmSync(tempDir, { recursive: true, force: true })
    },
  }
}

export const call = (callId: string, name: string, args: Record<string, unknown>): ToolCall => ({ callId, name, args })

/** A model that answers each input with the calls `turn` returns (none ends its turn). */
export function scriptedModel(turn: (input: ModelInput) => ToolCall[]): Model & { inputs: ModelInput[] } {
  const inputs: ModelInput[] = []
  return {
    inputs,
    next(input) {
      inputs.push(input)
      return turn(input)
    },
  }
}

/** Every notification the model received, in order. */
export function notificationsSeen(inputs: readonly ModelInput[]): QueuedNotification[] {
  return inputs.flatMap((i) => (i.kind === 'notifications' ? i.notifications : []))
}

/** Every tool response the model received, in order. */
export function responsesSeen(inputs: readonly ModelInput[]): ToolResponse[] {
  return inputs.flatMap((i) => (i.kind === 'tool_results' ? i.responses : []))
}

/** The model text of a monitor event notification (CONTRACT.md §2.2). */
export function monitorEvent(id: string, toolUseId: string, desc: string, n: number, result: string): string {
  return [
    '<task-notification>',
    `<task-id>${id}</task-id>`,
    `<tool-use-id>${toolUseId}</tool-use-id>`,
    '<kind>monitor</kind>',
    '<status>running</status>',
    `<event-count>${n}</event-count>`,
    `<summary>Monitor "${desc}" emitted event #${n}.</summary>`,
    `<result>${result}</result>`,
    '</task-notification>',
  ].join('\n')
}

/** The model text of a monitor terminal notification (CONTRACT.md §2.2). */
export function monitorTerminal(
  id: string,
  toolUseId: string,
  desc: string,
  status: 'completed' | 'failed' | 'cancelled',
  n: number,
  command: string,
  detail?: string,
): string {
  const statusText = status === 'cancelled' ? 'was cancelled' : status
  return [
    '<task-notification>',
    `<task-id>${id}</task-id>`,
    `<tool-use-id>${toolUseId}</tool-use-id>`,
    '<kind>monitor</kind>',
    `<status>${status}</status>`,
    `<event-count>${n}</event-count>`,
    `<summary>Monitor "${desc}" ${statusText}. Total events: ${n}.</summary>`,
    `<command>${command}</command>`,
    ...(detail !== undefined ? [`<result>${detail}</result>`] : []),
    '</task-notification>',
  ].join('\n')
}

/** The monitor tool's success text (CONTRACT.md §2.12). */
export function monitorStarted(id: string, command: string, description: string, maxEvents: number, idleMs: number): string {
  return [
    'Monitor started.',
    `id: ${id}`,
    `command: ${command}`,
    `description: ${description}`,
    `max_events: ${maxEvents}`,
    `idle_timeout: ${idleMs}ms`,
    `Events will be delivered as notifications. The monitor auto-stops after ${maxEvents} events or ${idleMs}ms of silence.`,
    'To inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter — detail view + live updates).',
  ].join('\n')
}

/** The id line of a tool's llmContent (`id: <id>`). */
export function idFrom(llmContent: string): string {
  const m = /^id: (\S+)$/m.exec(llmContent)
  if (!m?.[1]) throw new Error(`no id in ${JSON.stringify(llmContent)}`)
  return m[1]
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z'
  } catch {
    return false
  }
}

export async function waitFor(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
