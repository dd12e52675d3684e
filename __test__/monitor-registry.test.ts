// MonitorRegistry in fed mode: the drop-in contract of CONTRACT.md §2.1–2.9 and
// the goldens of §3.11, through the built addon.
import { afterEach, describe, expect, it, vi } from 'vitest'

import { MonitorRegistry, type MonitorTask } from '../index.js'
import { recordingRegistry, registration, terminal } from './support/registry'

const registries: MonitorRegistry[] = []
function setup(options?: ConstructorParameters<typeof MonitorRegistry>[0]) {
  const r = recordingRegistry(options)
  registries.push(r.registry)
  return r
}
afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll({ notify: false })
})

describe('golden texts (CONTRACT.md §2.2)', () => {
  it('event and completion', () => {
    const { registry, notifications } = setup()
    registry.register(registration())
    registry.emitEvent('mon-1', 'hello world')
    registry.complete('mon-1', 0)
    expect(notifications[0].display).toBe('Monitor "watch app logs" event #1: hello world')
    expect(notifications[0].model).toBe(
      '<task-notification>\n<task-id>mon-1</task-id>\n<kind>monitor</kind>\n<status>running</status>\n<event-count>1</event-count>\n<summary>Monitor "watch app logs" emitted event #1.</summary>\n<result>hello world</result>\n</task-notification>',
    )
    expect(notifications[0].meta).toMatchObject({ monitorId: 'mon-1', status: 'running', eventCount: 1 })
    expect(notifications[1].display).toBe('Monitor "watch app logs" completed. (1 events)')
    expect(notifications[1].model).toBe(
      '<task-notification>\n<task-id>mon-1</task-id>\n<kind>monitor</kind>\n<status>completed</status>\n<event-count>1</event-count>\n<summary>Monitor "watch app logs" completed. Total events: 1.</summary>\n<command>tail -f /var/log/app.log</command>\n<result>Exited with code 0</result>\n</task-notification>',
    )
    const entry = registry.get('mon-1')!
    expect(entry.status).toBe('completed')
    expect(entry.endTime).toEqual(expect.any(Number))
  })

  it('complete(null) has no <result>; fail shows the stripped error', () => {
    const { registry, notifications } = setup()
    registry.register(registration())
    registry.complete('mon-1', null)
    expect(notifications[0].model).toContain('<status>completed</status>')
    expect(notifications[0].model).not.toContain('<result>')
    registry.register(registration({ monitorId: 'mon-2' }))
    registry.fail('mon-2', 'before\x00mid\x1B[31mafter\u0085end')
    expect(notifications[1].model).toContain('<status>failed</status>')
    expect(notifications[1].model).toContain('<result>beforemid[31mafterend</result>')
    expect(notifications[1].model).not.toMatch(/[\x00\x1B\u0085]/)
  })

  it('labels, truncation, escaping and bidi removal', () => {
    const { registry, notifications } = setup()
    registry.register(
      registration({ description: 'A'.repeat(200), command: 'grep "a&b" < /dev/null', toolUseId: 'call-xyz' }),
    )
    registry.emitEvent('mon-1', '<script>alert("xss")</script>')
    registry.emitEvent('mon-1', 'x'.repeat(3000))
    registry.emitEvent('mon-1', "she said \"hi\" and it's ok")
    registry.emitEvent('mon-1', '/var/a\u202Eevil\u2069/out.log')
    registry.complete('mon-1', 0)
    const label = `${'A'.repeat(77)}...`
    expect(notifications[0].display.startsWith(`Monitor "${label}" event #1: `)).toBe(true)
    expect(notifications[0].model).toContain(`<summary>Monitor "${label}" emitted event #1.</summary>`)
    expect(notifications[0].model).toContain('&lt;script&gt;')
    expect(notifications[0].model).not.toContain('<script>')
    expect(notifications[0].model.match(/<\/task-notification>/g)).toHaveLength(1)
    expect(notifications[0].model).toContain('<tool-use-id>call-xyz</tool-use-id>')
    expect(notifications[0].meta.toolUseId).toBe('call-xyz')
    expect(notifications[1].model).toContain('...[truncated]')
    expect(notifications[1].model).not.toContain('x'.repeat(2001))
    expect(notifications[2].model).toContain('&quot;hi&quot;')
    expect(notifications[2].model).toContain('it&apos;s')
    expect(notifications[3].model).toContain('<result>/var/aevil/out.log</result>')
    for (const n of notifications) {
      expect(n.display + n.model).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/)
    }
    expect(notifications[4].model).toContain('<command>grep &quot;a&amp;b&quot; &lt; /dev/null</command>')
  })

  it('a droppedLines value the caller wrote shows in the terminal notification', () => {
    const { registry, notifications } = setup()
    const entry = registry.register(registration())
    entry.droppedLines = 5
    entry.pid = 4242
    expect(registry.get('mon-1')!.pid).toBe(4242)
    registry.complete('mon-1', 0)
    expect(notifications[0].display).toContain('5 lines dropped due to throttling')
    expect(notifications[0].model).toContain('Total events: 0. 5 lines dropped due to throttling.</summary>')
  })
})

describe('identity and state machine (CONTRACT.md §2.1)', () => {
  it('register returns the same object, mutated, and get() returns it live', () => {
    const { registry } = setup()
    const reg = registration()
    const entry = registry.register(reg)
    expect(entry).toBe(reg)
    expect(registry.get('mon-1')).toBe(reg)
    expect(reg).toMatchObject({ id: 'mon-1', kind: 'monitor', outputOffset: 0, notified: false, status: 'running' })
    // The native-only counters are 0 on fed entries.
    expect(reg).toMatchObject({ bytesRead: 0, linesSeen: 0, truncatedBytes: 0 })
    registry.emitEvent('mon-1', 'one')
    expect(reg.eventCount).toBe(1)
    registry.complete('mon-1', 3)
    expect(reg).toMatchObject({ status: 'completed', exitCode: 3, notified: true })
    expect(registry.getAll()[0]).toBe(reg)
  })

  it('register fires the register callback (unowned only), then status-change', () => {
    const { registry, log } = setup()
    registry.register(registration({ monitorId: 'a' }))
    registry.register(registration({ monitorId: 'b', ownerAgentId: 'agent-1' }))
    expect(log).toEqual(['register:a', 'status:running', 'status:running'])
  })

  it('status-change fires before the terminal notification of complete and fail', () => {
    const { registry, log } = setup()
    registry.register(registration())
    log.length = 0
    registry.complete('mon-1', 0)
    expect(log).toEqual(['status:completed', 'notify:completed:0'])
  })

  it('an ordinary event never fires status-change', () => {
    const { registry, log } = setup()
    registry.register(registration())
    log.length = 0
    registry.emitEvent('mon-1', 'x')
    expect(log).toEqual(['notify:running:1'])
  })

  it('terminal transitions are one-shot and unknown ids never throw', () => {
    const { registry, notifications } = setup()
    registry.register(registration())
    registry.complete('mon-1', 0)
    registry.cancel('mon-1')
    registry.fail('mon-1', 'late')
    registry.emitEvent('mon-1', 'late')
    expect(notifications).toHaveLength(1)
    expect(() => registry.complete('nope', 1)).not.toThrow()
    expect(() => registry.cancel('nope')).not.toThrow()
  })

  it('cancel({notify:false}) then complete sends no terminal notification', () => {
    const { registry, notifications } = setup()
    registry.register(registration())
    registry.cancel('mon-1', { notify: false })
    registry.complete('mon-1', 0)
    expect(notifications.filter((n) => n.model.includes('<status>'))).toHaveLength(0)
    expect(registry.get('mon-1')).toMatchObject({ status: 'cancelled', notified: true })
  })

  it('a duplicate id throws naming it and changes nothing', () => {
    const { registry, log } = setup()
    const first = registry.register(registration())
    log.length = 0
    expect(() => registry.register(registration())).toThrowError('Monitor "mon-1" is already registered.')
    expect(log).toEqual([])
    expect(registry.get('mon-1')).toBe(first)
    registry.complete('mon-1', 0)
    expect(() => registry.register(registration())).toThrowError('Monitor "mon-1" is already registered.')
  })

  it('the concurrency cap counts running entries only and is configurable', () => {
    const { registry } = setup({ maxConcurrent: 2 })
    registry.register(registration({ monitorId: 'a' }))
    registry.register(registration({ monitorId: 'b' }))
    expect(() => registry.register(registration({ monitorId: 'c' }))).toThrowError(
      'Cannot start monitor: maximum concurrent monitors (2) reached. Stop an existing monitor first.',
    )
    registry.complete('a', 0)
    expect(() => registry.register(registration({ monitorId: 'c' }))).not.toThrow()
    const defaults = setup()
    for (let i = 0; i < 16; i++) defaults.registry.register(registration({ monitorId: `m${i}` }))
    expect(() => defaults.registry.register(registration({ monitorId: 'm16' }))).toThrowError(
      'Cannot start monitor: maximum concurrent monitors (16) reached. Stop an existing monitor first.',
    )
  })

  it('prunes to 128 terminal entries, oldest first', () => {
    const { registry } = setup()
    for (let i = 0; i < 130; i++) {
      registry.register(registration({ monitorId: `mon-${i}`, startTime: 1000 + i }))
      registry.complete(`mon-${i}`, 0)
    }
    const ids = registry.getAll().map((e) => e.id)
    expect(ids).toHaveLength(128)
    expect(ids).toContain('mon-129')
    expect(registry.getRunning()).toHaveLength(0)
  })
})

describe('max events, cancel and abort orderings (CONTRACT.md §2.19)', () => {
  it('max events: three events then completed with Max events reached; listeners cannot exceed it', () => {
    const { registry, notifications, log } = setup()
    const ac = new AbortController()
    ac.signal.addEventListener('abort', () => registry.emitEvent('mon-1', 'flushed by listener'))
    registry.register(registration({ maxEvents: 3, abortController: ac }))
    log.length = 0
    for (let i = 1; i <= 4; i++) registry.emitEvent('mon-1', `line ${i}`)
    expect(log).toEqual(['notify:running:1', 'notify:running:2', 'notify:running:3', 'status:completed', 'notify:completed:3'])
    expect(ac.signal.aborted).toBe(true)
    expect(notifications[3].model).toContain('<result>Max events reached</result>')
    expect(registry.get('mon-1')).toMatchObject({ eventCount: 3, error: 'Max events reached' })
  })

  it('user cancel aborts first: a listener flush is delivered, then cancelled', () => {
    const { registry, notifications } = setup()
    const ac = new AbortController()
    ac.signal.addEventListener('abort', () => registry.emitEvent('mon-1', 'last partial line'))
    registry.register(registration({ abortController: ac }))
    registry.cancel('mon-1')
    expect(notifications.map((n) => n.display)).toEqual([
      'Monitor "watch app logs" event #1: last partial line',
      'Monitor "watch app logs" was cancelled. (1 events)',
    ])
    expect(notifications[1].model).toContain('<status>cancelled</status>')
  })

  it('silent cancel settles before abort, emits nothing, and wakes the owner', () => {
    const { registry, notifications } = setup()
    const wakes: string[] = []
    const agentNotes: string[] = []
    registry.setAgentLifecycleCallback('agent-1', () => wakes.push('wake'))
    registry.setAgentNotificationCallback('agent-1', (d) => agentNotes.push(d))
    const ac = new AbortController()
    let statusAtAbort = ''
    ac.signal.addEventListener('abort', () => {
      statusAtAbort = registry.get('mon-1')!.status
      registry.emitEvent('mon-1', 'ignored')
    })
    registry.register(registration({ ownerAgentId: 'agent-1', abortController: ac }))
    registry.cancel('mon-1', { notify: false })
    expect(statusAtAbort).toBe('cancelled')
    expect(wakes).toEqual(['wake'])
    expect(agentNotes).toEqual([])
    expect(notifications).toEqual([])
    expect(registry.get('mon-1')!.eventCount).toBe(0)
  })

  it('abortAll() notifies every running monitor; abortAll({notify:false}) none', () => {
    const { registry, notifications } = setup()
    registry.register(registration({ monitorId: 'a' }))
    registry.register(registration({ monitorId: 'b' }))
    registry.complete('a', 0)
    registry.abortAll()
    expect(terminal(notifications).map((n) => n.meta.monitorId)).toEqual(['a', 'b'])
    registry.register(registration({ monitorId: 'c' }))
    registry.abortAll({ notify: false })
    expect(terminal(notifications)).toHaveLength(2)
    expect(registry.get('c')!.status).toBe('cancelled')
  })

  it('cancelRunningForOwner collects first, so pruning cannot skip an owned entry', () => {
    const { registry } = setup()
    for (let i = 0; i < 128; i++) {
      registry.register(registration({ monitorId: `t${i}` }))
      registry.complete(`t${i}`, 0)
    }
    const controllers = [new AbortController(), new AbortController()]
    registry.register(registration({ monitorId: 'o1', ownerAgentId: 'agent', abortController: controllers[0] }))
    registry.register(registration({ monitorId: 'o2', ownerAgentId: 'agent', abortController: controllers[1] }))
    expect(registry.hasRunningForOwner('agent')).toBe(true)
    registry.cancelRunningForOwner('agent', { notify: false })
    expect(controllers.every((c) => c.signal.aborted)).toBe(true)
    expect(registry.hasRunningForOwner('agent')).toBe(false)
    expect(registry.getAll()).toHaveLength(128)
  })
})

describe('routing (CONTRACT.md §2.4)', () => {
  it('owned entries go only to their agent callback, never to the global one', () => {
    const { registry, notifications } = setup()
    const agent: string[] = []
    registry.register(registration({ ownerAgentId: 'agent-1', todoWorkChainId: 'chain-1' }))
    registry.emitEvent('mon-1', 'dropped: no agent callback')
    registry.setAgentNotificationCallback('agent-1', (d, _m, meta) => agent.push(`${d}|${meta.todoWorkChainId}`))
    registry.emitEvent('mon-1', 'to the agent')
    registry.setAgentNotificationCallback('agent-1', undefined)
    registry.emitEvent('mon-1', 'dropped again')
    expect(notifications).toEqual([])
    expect(agent).toEqual(['Monitor "watch app logs" event #2: to the agent|chain-1'])
  })

  it('clearing the global callback works', () => {
    const { registry, notifications } = setup()
    registry.register(registration())
    registry.setNotificationCallback(undefined)
    registry.emitEvent('mon-1', 'x')
    expect(notifications).toEqual([])
  })
})

describe('callbacks that throw (CONTRACT.md §2.1)', () => {
  it('are caught: registration and transitions complete', () => {
    const registry = new MonitorRegistry()
    registries.push(registry)
    registry.setRegisterCallback(() => {
      throw new Error('register boom')
    })
    registry.setStatusChangeCallback(() => {
      throw new Error('status boom')
    })
    registry.setNotificationCallback(() => {
      throw new Error('notify boom')
    })
    const entry = registry.register(registration())
    expect(registry.get('mon-1')).toBe(entry)
    registry.emitEvent('mon-1', 'x')
    registry.complete('mon-1', 0)
    expect(entry).toMatchObject({ status: 'completed', eventCount: 1, notified: true })
  })

  it('may re-enter the registry', () => {
    const registry = new MonitorRegistry()
    registries.push(registry)
    const seen: string[] = []
    registry.setNotificationCallback((_d, _m, meta) => {
      seen.push(`${meta.status}:${registry.get(meta.monitorId)!.status}`)
      if (meta.status === 'running') registry.complete(meta.monitorId, 0)
    })
    registry.register(registration())
    registry.emitEvent('mon-1', 'x')
    expect(seen).toEqual(['running:running', 'completed:completed'])
  })
})

describe('status-change subscription', () => {
  it('clearStatusChangeCallback clears only the installed callback', () => {
    const registry = new MonitorRegistry()
    registries.push(registry)
    const calls: string[] = []
    const oldCb = () => calls.push('old')
    const newCb = () => calls.push('new')
    registry.setStatusChangeCallback(oldCb)
    registry.setStatusChangeCallback(newCb)
    registry.clearStatusChangeCallback(oldCb)
    registry.register(registration())
    expect(calls).toEqual(['new'])
    registry.clearStatusChangeCallback(newCb)
    registry.complete('mon-1', 0)
    expect(calls).toEqual(['new'])
  })
})

describe('reset (CONTRACT.md §2.1)', () => {
  it('on an empty registry fires nothing but still clears per-agent callbacks', () => {
    const { registry, log } = setup()
    const agent: string[] = []
    registry.setAgentNotificationCallback('agent-1', (d) => agent.push(d))
    registry.reset()
    expect(log).toEqual([])
    registry.register(registration({ ownerAgentId: 'agent-1' }))
    registry.emitEvent('mon-1', 'x')
    expect(agent).toEqual([])
  })

  it('aborts running entries without notifications, removes all, one status-change with no argument', () => {
    const { registry, notifications, log } = setup()
    const ac = new AbortController()
    registry.register(registration({ monitorId: 'a', abortController: ac }))
    registry.register(registration({ monitorId: 'b' }))
    registry.complete('b', 0)
    log.length = 0
    notifications.length = 0
    registry.reset()
    expect(ac.signal.aborted).toBe(true)
    expect(terminal(notifications)).toEqual([])
    expect(log).toEqual(['status:none'])
    expect(registry.getAll()).toEqual([])
    expect(() => registry.register(registration({ monitorId: 'a' }))).not.toThrow()
  })
})

describe('fed idle timeout (CONTRACT.md §2.5)', () => {
  it('re-armed by accepted events; fires abort first, then Idle timeout', async () => {
    const { registry, notifications } = setup()
    const ac = new AbortController()
    let abortedAt = 0
    ac.signal.addEventListener('abort', () => {
      abortedAt = performance.now()
      registry.emitEvent('mon-1', 'flushed partial')
    })
    const registered = performance.now()
    registry.register(registration({ idleTimeoutMs: 1000, abortController: ac }))
    // The event goes 200 ms into the 1000 ms window, from this thread (blocked meanwhile, so no
    // timer of ours can make it late). The idle timer cannot fire early: re-armed by the event,
    // it fires no sooner than a whole timeout after it (a few ms of slack for the native clock's
    // whole milliseconds, far below the 200 ms it proves).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200)
    const sentAt = performance.now() - registered
    registry.emitEvent('mon-1', 'keeps it alive')
    expect(sentAt).toBeLessThan(1000)
    await vi.waitFor(() => expect(registry.get('mon-1')!.status).toBe('completed'), { timeout: 10_000 })
    expect(abortedAt - registered).toBeGreaterThanOrEqual(sentAt + 1000 - 5)
    expect(notifications.map((n) => n.meta.status)).toEqual(['running', 'running', 'completed'])
    expect(notifications[1].display).toContain('flushed partial')
    expect(notifications[2].model).toContain('<result>Idle timeout</result>')
    expect(registry.get('mon-1')!.error).toBe('Idle timeout')
  })

  // Qwen's own registry tests drive the idle timer with fake timers: fed entries use
  // JavaScript's setTimeout/clearTimeout, looked up when armed.
  it('runs on JavaScript timers, so vi.useFakeTimers() drives it', () => {
    vi.useFakeTimers()
    try {
      const { registry, notifications } = setup()
      registry.register(registration({ idleTimeoutMs: 5000 }))
      expect(vi.getTimerCount()).toBe(1)
      vi.advanceTimersByTime(4000)
      registry.emitEvent('mon-1', 'keeps it alive')
      vi.advanceTimersByTime(4999)
      expect(registry.get('mon-1')!.status).toBe('running')
      vi.advanceTimersByTime(1)
      expect(registry.get('mon-1')!.status).toBe('completed')
      expect(registry.get('mon-1')!.error).toBe('Idle timeout')
      expect(notifications.map((n) => n.meta.status)).toEqual(['running', 'completed'])
      // Settling clears the timer.
      expect(vi.getTimerCount()).toBe(0)
      registry.register(registration({ monitorId: 'mon-2', idleTimeoutMs: 5000 }))
      registry.complete('mon-2', 0)
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('argument errors', () => {
  it('wrong types are TypeErrors naming the argument; ranges are RangeErrors', () => {
    const registry = new MonitorRegistry()
    registries.push(registry)
    expect(() => registry.emitEvent(1 as unknown as string, 'x')).toThrowError(TypeError)
    expect(() => registry.emitEvent(1 as unknown as string, 'x')).toThrowError(/"monitorId"/)
    expect(() => registry.register(null as unknown as ReturnType<typeof registration>)).toThrowError(TypeError)
    expect(() => registry.register({ command: 'x' } as unknown as ReturnType<typeof registration>)).toThrowError(
      /"registration.monitorId"/,
    )
    expect(() => registry.setNotificationCallback(42 as unknown as () => void)).toThrowError(TypeError)
    expect(() => registry.cancel('x', { notify: 'no' as unknown as boolean })).toThrowError(/"options.notify"/)
    expect(() => new MonitorRegistry({ maxConcurrent: 0 })).toThrowError(RangeError)
    expect(() => new MonitorRegistry({ throttle: { burst: 0, refillMs: 1000 } })).toThrowError(RangeError)
    expect(() => new MonitorRegistry({ throttle: true as unknown as false })).toThrowError(TypeError)
  })

  it('getAll/getRunning return entries typed as MonitorTask', () => {
    const registry = new MonitorRegistry()
    registries.push(registry)
    registry.register(registration())
    const all: MonitorTask[] = registry.getAll()
    expect(all.map((e) => e.monitorId)).toEqual(['mon-1'])
  })
})
