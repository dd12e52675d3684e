// Wiring: one monitor pool and one background-shell pool per CLI process, the three tools on top,
// and a non-interactive session per prompt.
import { join } from 'node:path'

import { BackgroundShellRegistry, MonitorRegistry, type MonitorRegistryOptions, type PersistOptions } from 'taskstream'

import { MonitorTool, RECOMMENDED_MONITOR_SIGNAL, type MonitorSignalOptions } from './monitorTool.js'
import { NonInteractiveSession, type Model } from './session.js'
import { ShellTool, type ShellToolOptions } from './shellTool.js'
import { TaskStopTool } from './taskStopTool.js'
import { ReadOutputTool } from './readOutputTool.js'
import { WaitForTool } from './waitForTool.js'
import { tasksText, type TasksTextOptions } from './tasksCommand.js'
import { recoveredText, recoverTasks, type RecoveredTasks } from './recover.js'
import type { CliContext } from './types.js'

export interface CliOptions {
  /** The project directory: commands run here, and it is the workspace. */
  targetDir: string
  /** Where the CLI keeps its temporary files; background shells write under it. */
  projectTempDir: string
  conversationId: string
  extraWorkspaceDirs?: string[]
  userSkillsDirs?: string[]
  monitorRegistry?: MonitorRegistryOptions
  /** Batches, the importance lane and digests for the monitor tool (e.g. `RECOMMENDED_MONITOR_SIGNAL`). */
  monitorSignal?: MonitorSignalOptions
  shell?: ShellToolOptions
  /**
   * Run monitors and background shells persisted (taskstream's `persist`): they keep running
   * after this CLI process ends, for `leaseMs` (default 10 min) without a CLI process attached to
   * `stateDir`, and the next process picks them up with `cli.recover()`. One `stateDir` per
   * project (absolute; created 0700).
   */
  persist?: PersistOptions
}

export interface Cli {
  context: CliContext
  monitorTool: MonitorTool
  shellTool: ShellTool
  taskStopTool: TaskStopTool
  waitForTool: WaitForTool
  readOutputTool: ReadOutputTool
  /** A non-interactive run of one prompt with this model. */
  session(model: Model, options?: { maxWaitMs?: number }): NonInteractiveSession
  /** `/tasks`. */
  tasks(options?: TasksTextOptions): string
  /** At startup, with `persist`: takes over the last CLI process's tasks in `persist.stateDir`
   * (see recover.ts). Throws without `persist`. */
  recover(): RecoveredTasks
}

export function createCli(options: CliOptions): Cli {
  const context: CliContext = {
    monitors: new MonitorRegistry(options.monitorRegistry),
    shells: new BackgroundShellRegistry(),
    targetDir: options.targetDir,
    workspaceDirs: [options.targetDir, ...(options.extraWorkspaceDirs ?? [])],
    userSkillsDirs: options.userSkillsDirs ?? [],
    backgroundOutputDir: join(options.projectTempDir, 'background-shells', options.conversationId),
    ...(options.persist !== undefined ? { persist: options.persist } : {}),
  }
  const maxConcurrent = options.monitorRegistry?.maxConcurrent
  const monitorTool = new MonitorTool(context, maxConcurrent, options.monitorSignal)
  const shellTool = new ShellTool(context, options.shell)
  const taskStopTool = new TaskStopTool(context)
  const waitForTool = new WaitForTool(context)
  const readOutputTool = new ReadOutputTool(context)
  return {
    context,
    monitorTool,
    shellTool,
    taskStopTool,
    waitForTool,
    readOutputTool,
    session: (model, sessionOptions = {}) =>
      new NonInteractiveSession({ context, tools: [monitorTool, shellTool, taskStopTool, waitForTool, readOutputTool], model, ...sessionOptions }),
    tasks: (textOptions) => tasksText(context, textOptions),
    recover: () => recoverTasks(context),
  }
}

export { MonitorTool, ShellTool, TaskStopTool, WaitForTool, ReadOutputTool, NonInteractiveSession, tasksText, recoveredText, RECOMMENDED_MONITOR_SIGNAL }
export type { Model, RecoveredTasks }
