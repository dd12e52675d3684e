// Helpers for driving a MonitorRegistry the way the TypeScript CLI does (fed mode).
import { MonitorRegistry, type MonitorNotificationMeta, type MonitorRegistration, type MonitorTask } from '../../index.js'

export interface Delivered {
  display: string
  model: string
  meta: MonitorNotificationMeta
}

export function registration(overrides: Partial<MonitorRegistration> = {}): MonitorRegistration {
  const now = Date.now()
  return {
    monitorId: 'mon-1',
    command: 'tail -f /var/log/app.log',
    description: 'watch app logs',
    status: 'running',
    startTime: now,
    eventCount: 0,
    lastEventTime: now,
    maxEvents: 1000,
    idleTimeoutMs: 300_000,
    droppedLines: 0,
    outputFile: '',
    abortController: new AbortController(),
    ...overrides,
  }
}

/** A registry with a global notification callback that records everything. */
export function recordingRegistry(options?: ConstructorParameters<typeof MonitorRegistry>[0]) {
  const registry = new MonitorRegistry(options)
  const notifications: Delivered[] = []
  const log: string[] = []
  registry.setNotificationCallback((display, model, meta) => {
    notifications.push({ display, model, meta })
    log.push(`notify:${meta.status}:${meta.eventCount}`)
  })
  registry.setStatusChangeCallback((entry?: MonitorTask) => log.push(`status:${entry ? entry.status : 'none'}`))
  registry.setRegisterCallback((entry) => log.push(`register:${entry.id}`))
  return { registry, notifications, log }
}

export const terminal = (n: Delivered[]) => n.filter((d) => d.meta.status !== 'running')
