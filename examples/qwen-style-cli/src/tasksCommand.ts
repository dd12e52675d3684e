// The `/tasks` command's text (the CLI's tasksCommand.ts, CONTRACT.md §2.17): every entry of the
// shell and monitor registries, sorted by start time, one row each, plus the output path of shells.
import type { BackgroundShellRegistry, MonitorRegistry, MonitorTask, ShellTask } from 'taskstream'

export const TASKS_TIP =
  'Tip: focus the Background tasks pill in the footer (use ↓ from an empty composer) and press Enter for the interactive dialog with detail view + live updates.'

/** The CLI's `formatDuration(ms, { hideTrailingZeros })`: 850ms, 1.2s, 3s, 1m 5s, 2h 1s. */
export function formatDuration(ms: number, options: { hideTrailingZeros?: boolean } = {}): string {
  if (ms <= 0) return '0s'
  if (ms < 1000) return `${Math.round(ms)}ms`
  const seconds = ms / 1000
  if (seconds < 60) {
    const fixed = seconds.toFixed(1)
    return options.hideTrailingZeros && fixed.endsWith('.0') ? `${fixed.slice(0, -2)}s` : `${fixed}s`
  }
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  const parts = [h > 0 ? `${h}h` : '', m > 0 ? `${m}m` : '', s > 0 ? `${s}s` : ''].filter(Boolean)
  return parts.length > 0 ? parts.join(' ') : '0s'
}

const events = (n: number) => `${n} event${n === 1 ? '' : 's'}`

export function monitorStatusLabel(entry: MonitorTask): string {
  const n = entry.eventCount
  switch (entry.status) {
    case 'running':
      return `running (${events(n)})`
    case 'completed':
      return entry.error ? `completed (${entry.error}, ${events(n)})` : `completed (exit ${entry.exitCode ?? '?'}, ${events(n)})`
    case 'failed':
      return `failed: ${entry.error ?? 'unknown error'} (${events(n)})`
    case 'cancelled':
      return `cancelled (${events(n)})`
  }
}

export function shellStatusLabel(entry: ShellTask): string {
  switch (entry.status) {
    case 'running':
      return 'running'
    case 'completed':
      return `completed (exit ${entry.exitCode ?? '?'})`
    case 'failed':
      return `failed: ${entry.error ?? 'unknown error'}`
    case 'cancelled':
      return 'cancelled'
  }
}

interface Row {
  startTime: number
  lines: string[]
}

export interface TasksTextOptions {
  /** The interactive TUI prints a tip first. */
  interactive?: boolean
  now?: number
}

/** The text `/tasks` prints. */
export function tasksText(
  registries: { monitors: MonitorRegistry; shells: BackgroundShellRegistry },
  { interactive = false, now = Date.now() }: TasksTextOptions = {},
): string {
  const runtime = (e: { startTime: number; endTime?: number }) => formatDuration((e.endTime ?? now) - e.startTime, { hideTrailingZeros: true })
  const pid = (p: number | undefined) => (p !== undefined ? ` pid=${p}` : '')
  const rows: Row[] = [
    ...registries.shells.getAll().map((e) => ({
      startTime: e.startTime,
      lines: [`[${e.shellId}] ${shellStatusLabel(e)}  ${runtime(e)}${pid(e.pid)}  ${e.command}`, `${' '.repeat(12)}output: ${e.outputPath}`],
    })),
    ...registries.monitors.getAll().map((e) => ({
      startTime: e.startTime,
      lines: [`[${e.monitorId}] ${monitorStatusLabel(e)}  ${runtime(e)}${pid(e.pid)}  ${e.description}`],
    })),
  ]
  if (rows.length === 0) return 'No background tasks.'
  rows.sort((a, b) => a.startTime - b.startTime) // stable: equal start times keep registry order
  return [...(interactive ? [TASKS_TIP, ''] : []), `Background tasks (${rows.length} total)`, '', ...rows.flatMap((r) => r.lines)].join('\n')
}
