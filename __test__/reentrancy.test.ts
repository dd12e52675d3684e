// Callbacks that call back into the registry without end. Each case runs in its
// own Node process, so a native stack overflow shows up as a failed exit instead of killing
// the test runner.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const addon = join(__dirname, '..')

function runNode(script: string) {
  const result = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    env: { ...process.env, TASKSTREAM_ADDON: addon },
    timeout: 60_000,
  })
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr }
}

describe('re-entrant callbacks', () => {
  it('a notification callback that re-enters emitEvent 100000 times neither crashes nor loses an event', () => {
    const { status, signal, stdout, stderr } = runNode(`
      const { MonitorRegistry } = require(process.env.TASKSTREAM_ADDON)
      const r = new MonitorRegistry({ throttle: false })
      const seen = []
      let depth = 0, maxDepth = 0
      r.setNotificationCallback((display, model, meta) => {
        if (meta.status !== 'running') { seen.push(meta.status); return }
        seen.push(meta.eventCount)
        depth++; maxDepth = Math.max(maxDepth, depth)
        if (meta.eventCount < 100000) r.emitEvent('m', 'line ' + meta.eventCount)
        depth--
      })
      r.register({ monitorId: 'm', command: 'c', description: 'd', status: 'running', startTime: Date.now(),
        eventCount: 0, lastEventTime: Date.now(), maxEvents: 100000, idleTimeoutMs: 300000, droppedLines: 0,
        outputFile: '', abortController: new AbortController() })
      r.emitEvent('m', 'first')
      const inOrder = seen.slice(0, 100000).every((n, i) => n === i + 1)
      console.log(JSON.stringify({ count: seen.length, inOrder, last: seen.at(-1), maxDepth,
        eventCount: r.get('m').eventCount, status: r.get('m').status }))
    `)
    expect({ status, signal, stderr }).toMatchObject({ status: 0, signal: null })
    const out = JSON.parse(stdout)
    expect(out).toMatchObject({ count: 100001, inOrder: true, last: 'completed', eventCount: 100000, status: 'completed' })
    // Nesting is bounded (the rest is delivered iteratively by the outer calls).
    expect(out.maxDepth).toBeLessThanOrEqual(16)
  })

  it('retrying start() from every failed notification neither crashes nor stops early', () => {
    const { status, signal, stdout, stderr } = runNode(`
      const { MonitorRegistry } = require(process.env.TASKSTREAM_ADDON)
      const r = new MonitorRegistry({ maxRetainedTerminal: 4 })
      let failed = 0
      r.setNotificationCallback((display, model, meta) => {
        if (meta.status !== 'failed') return
        failed++
        if (failed < 3000) r.start({ command: 'true', cwd: '/nonexistent-taskstream-dir' })
      })
      r.start({ command: 'true', cwd: '/nonexistent-taskstream-dir' })
      setImmediate(() => console.log(JSON.stringify({ failed, running: r.getRunning().length })))
    `)
    expect({ status, signal, stderr }).toMatchObject({ status: 0, signal: null })
    expect(JSON.parse(stdout)).toEqual({ failed: 3000, running: 0 })
  })
})
