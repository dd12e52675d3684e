// Tasks stopped from unusual places still lose their processes (issue 9 §2): a cancel from a
// callback that runs inside start(), complete()/fail() on a native monitor. Every check counts
// processes by pid and allows 2 s.
import { describe, expect, it } from 'vitest'

import { MonitorRegistry, type MonitorTask } from '../index.js'
import { isAlive, viaScript, waitFor } from './support/process'

const quiet = 'sleep 30' // bash execs it: the entry's pid is the sleep itself

async function expectDead(pid: number | undefined) {
  expect(pid).toBeGreaterThan(1)
  await waitFor(() => !isAlive(pid!), 2000, `pid ${pid} to die`)
}

describe('a native monitor stopped while start() runs its callbacks', () => {
  const cases: Array<[string, (r: MonitorRegistry, e: MonitorTask) => void, string]> = [
    ['cancel() from the register callback', (r, e) => r.cancel(e.id), 'cancelled'],
    ['cancel({ notify: false }) from the register callback', (r, e) => r.cancel(e.id, { notify: false }), 'cancelled'],
    ['abortAll() from the register callback', (r) => r.abortAll(), 'cancelled'],
    ['entry.abortController.abort() from the register callback', (_r, e) => e.abortController.abort(), 'cancelled'],
    ['reset() from the register callback', (r) => r.reset(), 'gone'],
  ]
  it.each(cases)('%s kills the child', async (_name, stop, expected) => {
    const registry = new MonitorRegistry()
    let stopped = false
    registry.setRegisterCallback((entry) => {
      if (stopped) return
      stopped = true
      stop(registry, entry)
    })
    const entry = registry.start({ command: quiet })
    await expectDead(entry.pid)
    if (expected === 'gone') expect(registry.get(entry.id)).toBeFalsy()
    else await waitFor(() => registry.get(entry.id)?.status === expected, 2000, expected)
  })

  it('cancel() from the status-change callback kills the child', async () => {
    const registry = new MonitorRegistry()
    registry.setStatusChangeCallback((entry) => {
      if (entry?.status === 'running') registry.cancel(entry.id)
    })
    const entry = registry.start({ command: quiet })
    await expectDead(entry.pid)
    expect(registry.get(entry.id)?.status).toBe('cancelled')
  })

  it('abortAll() from the status-change callback kills the child', async () => {
    const registry = new MonitorRegistry()
    let once = false
    registry.setStatusChangeCallback(() => {
      if (once) return
      once = true
      registry.abortAll()
    })
    const entry = registry.start({ command: quiet })
    await expectDead(entry.pid)
  })
})

describe('complete() and fail() on a native monitor stop its process', () => {
  it.each([
    ['complete', (r: MonitorRegistry, id: string) => r.complete(id, 0), 'completed'],
    ['fail', (r: MonitorRegistry, id: string) => r.fail(id, 'stopped by the caller'), 'failed'],
  ] as const)('%s()', async (_name, settle, status) => {
    const registry = new MonitorRegistry()
    const notes: string[] = []
    registry.setNotificationCallback((_d, _m, meta) => notes.push(meta.status))
    const entry = registry.start({ command: viaScript('trap "" TERM; sleep 30 & wait') })
    await waitFor(() => entry.pid !== undefined && isAlive(entry.pid), 2000, 'child')
    settle(registry, entry.id)
    expect(registry.get(entry.id)?.status).toBe(status)
    await expectDead(entry.pid)
    // Exactly one terminal notification: the child's death does not settle it again.
    await new Promise((r) => setTimeout(r, 300))
    expect(notes.filter((s) => s !== 'running')).toEqual([status])
  })
})
