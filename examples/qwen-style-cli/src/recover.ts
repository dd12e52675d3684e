// Picking up the last CLI process's tasks (docs/persistence.md of taskstream): with `persist` set,
// the monitor tool and background shells run their tasks under taskstream's keeper, so they
// outlive the CLI process however it ends (a quit, a crash, an update). At startup the next CLI
// process calls `cli.recover()`: both registries take over what is still running (same ids,
// commands and start times), report what ended meanwhile once (with its real exit status), and
// from then on `/tasks`, `wait_for`, `read_background_output` and `task_stop` treat them like
// tasks this process started.
import type { RecoverCorrupt, RecoverLost } from 'taskstream'

import type { CliContext } from './types.js'

export interface RecoveredTasks {
  /** Still running, now owned by this process: monitor and shell ids. */
  adopted: string[]
  /** Ended while no CLI process ran; listed by `/tasks` with their recorded end. */
  settled: string[]
  /** Their keeper is gone, or the recorded pid is another process now: never signalled. */
  lost: RecoverLost[]
  /** State files that could not be trusted (renamed `<name>.corrupt`). */
  corrupt: RecoverCorrupt[]
  /** Owned by another live CLI process on the same state directory: left alone. */
  busy: string[]
}

/** Runs `recover({ stateDir })` on the monitor and the shell registry. Set the registries'
 * notification callbacks first to receive the terminal notifications of the settled tasks and the
 * digest of the lines a monitor printed while no CLI ran. */
export function recoverTasks(ctx: CliContext): RecoveredTasks {
  if (ctx.persist === undefined) throw new Error('recover() needs the persist option of createCli()')
  const { stateDir } = ctx.persist
  const monitors = ctx.monitors.recover({ stateDir })
  const shells = ctx.shells.recover({ stateDir })
  return {
    adopted: [...monitors.adopted.map((t) => t.monitorId), ...shells.adopted.map((t) => t.shellId)],
    settled: [...monitors.settled.map((t) => t.monitorId), ...shells.settled.map((t) => t.shellId)],
    lost: [...monitors.lost, ...shells.lost],
    corrupt: [...monitors.corrupt, ...shells.corrupt],
    busy: [...monitors.busy, ...shells.busy],
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** The line the CLI prints at startup after `recover()`; `null` when there was nothing to pick up. */
export function recoveredText(r: RecoveredTasks): string | null {
  const parts: string[] = []
  if (r.adopted.length > 0) parts.push(`${plural(r.adopted.length, 'background task')} still running (${r.adopted.join(', ')})`)
  if (r.settled.length > 0) parts.push(`${r.settled.length} ended meanwhile (${r.settled.join(', ')})`)
  if (r.lost.length > 0) parts.push(`${r.lost.length} lost (${r.lost.map((l) => `${l.id}: ${l.reason}`).join('; ')})`)
  if (r.corrupt.length > 0) parts.push(`${plural(r.corrupt.length, 'unreadable state file')} skipped`)
  if (r.busy.length > 0) parts.push(`${r.busy.length} owned by another running session (${r.busy.join(', ')})`)
  if (parts.length === 0) return null
  return `From the last session: ${parts.join('; ')}. Type /tasks to see them.`
}
