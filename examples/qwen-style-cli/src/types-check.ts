// Uses every name the package exports, values and types, so that `tsc --noEmit --strict` checks
// the shipped index.d.ts from a consumer's side (test/package.test.ts checks that no exported name
// is missing here). `exerciseEveryExport()` also runs each value once, cheaply.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import {
  __napiBindingTarget,
  BackgroundShellRegistry,
  blockedSleepMessage,
  detectBlockedSleepPattern,
  detectCommandSubstitution,
  escapeXml,
  executeBackground,
  getDefaultBackgroundShellRegistry,
  hasNonFinalTopLevelBackgroundOperator,
  hasTopLevelTrailingBackgroundOperator,
  isBinary,
  LineBuffer,
  MonitorRegistry,
  normalizeMonitorCommand,
  readTaskOutput,
  readTaskOutputTail,
  RECOMMENDED_SIGNAL,
  recommendedSignal,
  sanitizeFilenameComponent,
  sanitizeMonitorLine,
  statusFilePathFor,
  stripAnsi,
  stripDisplayControlChars,
  stripShellWrapper,
  stripTrailingBackgroundAmp,
  trimTrailingShellComment,
  truncateNotificationLabel,
  validateMonitorParams,
  type BackgroundShellHandle,
  type BackgroundShellResult,
  type BackgroundShellStatus,
  type ExecuteBackgroundOptions,
  type LineBufferOptions,
  type MonitorCancelOptions,
  type MonitorNotificationMeta,
  type MonitorRegistration,
  type MonitorRegistryOptions,
  type MonitorStartOptions,
  type MonitorStatus,
  type MonitorTask,
  type MonitorToolParams,
  type MonitorValidationContext,
  type NormalizedMonitorCommand,
  type OutputTailError,
  type OutputTailText,
  type PersistOptions,
  type RecommendedSignal,
  type RecoverCorrupt,
  type RecoverLost,
  type RecoverOptions,
  type ShellNotificationMeta,
  type ShellTask,
  type ShellTaskRegistration,
  type CursorPosition,
  type ScreenSnapshot,
  type ReadTaskOutputOptions,
  type TaskEnd,
  type TaskLimits,
  type TaskOutputRead,
  type TaskUsage,
  type TerminalOptions,
  type ThrottleOptions,
  type WaitForOptions,
  type WaitReason,
  type WaitResult,
} from 'taskstream'

const target: 'native' | 'wasm32-wasi' | 'wasm32-wasip1' = __napiBindingTarget

// The string unions are closed: a status the TypeScript core never used does not type-check.
// @ts-expect-error 'paused' is not a MonitorStatus
const notAMonitorStatus: MonitorStatus = 'paused'
// @ts-expect-error 'paused' is not a BackgroundShellStatus
const notAShellStatus: BackgroundShellStatus = 'paused'
// Optional fields are optional, required ones required.
// @ts-expect-error command is required
const noCommand: MonitorStartOptions = { description: 'x' }

export interface ExportsSummary {
  target: typeof target
  guards: Array<string | boolean | null>
  text: Array<string | boolean>
  lines: string[]
  normalized: NormalizedMonitorCommand
  tail: OutputTailText | OutputTailError | undefined
  fedNotifications: Array<[string, MonitorNotificationMeta]>
  nativeEntry: Pick<MonitorTask, 'kind' | 'status' | 'maxEvents'>
  shellResult: BackgroundShellResult
  shellNotifications: Array<[string, ShellNotificationMeta]>
  defaultRegistryIsShared: boolean
  statusPath: string
  recovered: { adopted: MonitorTask[]; settled: ShellTask[]; lost: RecoverLost[]; corrupt: RecoverCorrupt[]; busy: string[] }
  signal: RecommendedSignal
  signalFrozen: boolean
}

export async function exerciseEveryExport(): Promise<ExportsSummary> {
  void notAMonitorStatus
  void notAShellStatus
  void noCommand
  const dir = mkdtempSync(join(tmpdir(), 'qwen-style-cli-types-'))
  try {
    const params: MonitorToolParams = { command: 'tail -f app.log', max_events: 10, idle_timeout_ms: 1000, directory: dir }
    const ctx: MonitorValidationContext = { workspaceDirs: [dir], userSkillsDirs: [] }
    const guards: Array<string | boolean | null> = [
      detectBlockedSleepPattern('sleep 5'),
      blockedSleepMessage('sleep 1'),
      stripTrailingBackgroundAmp('npm run dev &'),
      trimTrailingShellComment('ls # list'),
      stripShellWrapper("bash -c 'echo hi'"),
      hasTopLevelTrailingBackgroundOperator('server &'),
      hasNonFinalTopLevelBackgroundOperator('a & b'),
      detectCommandSubstitution('echo $(id)'),
      validateMonitorParams(params, ctx),
    ]
    const normalized: NormalizedMonitorCommand = normalizeMonitorCommand("bash -c 'npm run dev &'")

    const text: Array<string | boolean> = [
      sanitizeMonitorLine('a\u0007b'),
      escapeXml('<a & b>'),
      stripDisplayControlChars('x\u202Ey'),
      stripAnsi('\u001b[31mred\u001b[0m'),
      truncateNotificationLabel('  many   spaces  '),
      isBinary(Buffer.from([0x61, 0x00])),
      sanitizeFilenameComponent('conv/1'),
    ]
    const lineOptions: LineBufferOptions = { maxLineCodePoints: 100 }
    const buffer = new LineBuffer(lineOptions)
    const lines = [...buffer.push('one\r\ntw'), ...buffer.push('o\n'), ...buffer.flush()]

    // Fed mode, as the TypeScript monitor tool drives it.
    const throttle: ThrottleOptions = { burst: 5, refillMs: 1000 }
    const registryOptions: MonitorRegistryOptions = { maxConcurrent: 2, maxRetainedTerminal: 8, throttle }
    const monitors = new MonitorRegistry(registryOptions)
    const fedNotifications: Array<[string, MonitorNotificationMeta]> = []
    monitors.setNotificationCallback((_display: string, model: string, meta: MonitorNotificationMeta) => {
      fedNotifications.push([model, meta])
    })
    const registration: MonitorRegistration = {
      monitorId: 'mon-fed',
      command: 'tail -f app.log',
      description: 'app log',
      status: 'running',
      startTime: Date.now(),
      eventCount: 0,
      lastEventTime: Date.now(),
      maxEvents: 10,
      idleTimeoutMs: 60_000,
      droppedLines: 0,
      outputFile: '',
      abortController: new AbortController(),
    }
    const fed: MonitorTask = monitors.register(registration)
    fed.pid = 4242
    monitors.emitEvent('mon-fed', 'server started')
    const cancelOptions: MonitorCancelOptions = { notify: true }
    monitors.cancel('mon-fed', cancelOptions)

    // Native mode (its notifications are not collected: they arrive asynchronously).
    monitors.setNotificationCallback(undefined)
    const startOptions: MonitorStartOptions = { command: 'true', description: 'noop', maxEvents: 3, cwd: dir }
    const native = monitors.start(startOptions)
    const nativeEntry = { kind: native.kind, status: native.status, maxEvents: native.maxEvents }
    monitors.abortAll({ notify: false })

    // Background shells, in a registry of our own and in the default one.
    const shells = new BackgroundShellRegistry()
    const shellNotifications: Array<[string, ShellNotificationMeta]> = []
    shells.setNotificationCallback((_display: string, model: string, meta: ShellNotificationMeta) => {
      shellNotifications.push([model, meta])
    })
    const registered: ShellTaskRegistration = {
      shellId: 'bg_fed00001',
      command: 'make',
      cwd: dir,
      status: 'running',
      startTime: Date.now(),
      outputPath: join(dir, 'shell-bg_fed00001.output'),
      abortController: new AbortController(),
    }
    const task: ShellTask = shells.register(registered)
    shells.complete(task.id, 0, Date.now())
    const options: ExecuteBackgroundOptions = { command: 'printf "done\\n"', cwd: dir, outputDir: dir, registry: shells }
    const handle: BackgroundShellHandle = executeBackground(options)
    const shellResult: BackgroundShellResult = await handle.done
    const status: BackgroundShellStatus = shellResult.status
    void status
    const terminalOptions: TerminalOptions = { cols: 80, rows: 24 }
    const tty = executeBackground({ command: 'echo on a terminal', cwd: dir, outputDir: dir, registry: shells, terminal: terminalOptions })
    await tty.done
    const screen: ScreenSnapshot | undefined = shells.screen(tty.shellId)
    const cursor: CursorPosition | undefined = screen?.cursor
    void cursor
    const end: TaskEnd = shellResult.end
    void end
    // Task control (API.md §6.8): limits on a tree (typed only: whether this host enforces them
    // is the library's tests' business), and what a task with limits used.
    const limits: TaskLimits = { memoryBytes: 256 * 2 ** 20, cpuPercent: 100, maxProcesses: 64 }
    const limited: ExecuteBackgroundOptions = { ...options, limits, timeoutMs: 60_000 }
    void limited
    const usage: TaskUsage | undefined = shells.get(handle.shellId)?.usage
    void usage
    const waitOptions: WaitForOptions = { timeoutMs: 50 }
    const waited: WaitResult = await shells.waitFor(handle.shellId, waitOptions)
    const reason: WaitReason = waited.reason
    void reason
    const readOptions: ReadTaskOutputOptions = { offset: 0, maxBytes: 4096 }
    const read = readTaskOutput(handle.outputPath, readOptions)
    const readText: TaskOutputRead | undefined = 'error' in read ? undefined : read
    void readText
    const tail = readTaskOutputTail(handle.outputPath)
    const defaultRegistryIsShared = getDefaultBackgroundShellRegistry() === getDefaultBackgroundShellRegistry()

    // Persistence: the options a persisted task takes (not started here: a keeper is a process),
    // and recover() on a state directory with nothing in it.
    const persist: PersistOptions = { stateDir: join(dir, 'state'), leaseMs: 60_000 }
    const persistedStart: MonitorStartOptions = { command: 'npm run dev', persist }
    void persistedStart
    const recoverOptions: RecoverOptions = { stateDir: persist.stateDir }
    const fromMonitors = new MonitorRegistry().recover(recoverOptions)
    const fromShells = new BackgroundShellRegistry().recover(recoverOptions)
    const lost: RecoverLost[] = [...fromMonitors.lost, ...fromShells.lost]
    const corrupt: RecoverCorrupt[] = [...fromMonitors.corrupt, ...fromShells.corrupt]
    const recovered = { adopted: fromMonitors.adopted, settled: fromShells.settled, lost, corrupt, busy: [...fromMonitors.busy, ...fromShells.busy] }
    // The recommended signal setting: frozen, and spread into start() as it is.
    const signal: Readonly<RecommendedSignal> = RECOMMENDED_SIGNAL
    const withSignal: MonitorStartOptions = { command: 'npm run dev', ...signal }
    void withSignal
    let signalFrozen = false
    try {
      // @ts-expect-error RECOMMENDED_SIGNAL is read-only
      RECOMMENDED_SIGNAL.batchMs = 1
    } catch (error) {
      signalFrozen = error instanceof TypeError
    }
    const signalCopy: RecommendedSignal = recommendedSignal()

    return {
      target,
      guards,
      text,
      lines,
      normalized,
      tail,
      fedNotifications,
      nativeEntry,
      shellResult,
      shellNotifications,
      defaultRegistryIsShared,
      statusPath: statusFilePathFor(handle.outputPath),
      recovered,
      signal: signalCopy,
      signalFrozen,
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
