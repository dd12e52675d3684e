// Debug logging: off by default, on with TASKSTREAM_LOG, always on stderr, never on stdout.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const script = `
const { MonitorRegistry } = require(${JSON.stringify(join(__dirname, '..', 'index.js'))})
const r = new MonitorRegistry()
r.setNotificationCallback(() => { throw new Error('callback boom') })
r.register({ monitorId: 'm', command: 'c', description: 'd', abortController: new AbortController() })
r.emitEvent('m', 'x')
// An owned entry whose agent has no notification callback: dropped, with the debug line (CONTRACT.md §2.4).
r.register({ monitorId: 'owned', command: 'c', description: 'd', ownerAgentId: 'agent-7', abortController: new AbortController() })
r.emitEvent('owned', 'y')
r.abortAll({ notify: false })
process.stdout.write('done')
`

function run(env: Record<string, string>) {
  const { TASKSTREAM_LOG: _ignored, ...base } = process.env
  return spawnSync(process.execPath, ['-e', script], { env: { ...base, ...env }, encoding: 'utf8', timeout: 20_000 })
}

describe('debug logging', () => {
  it('is silent by default', () => {
    const result = run({})
    expect(result.status).toBe(0)
    expect(result.stdout).toBe('done')
    expect(result.stderr).toBe('')
  })

  it('writes to stderr with TASKSTREAM_LOG=debug, and a throwing callback is logged, not fatal', () => {
    const result = run({ TASKSTREAM_LOG: 'debug' })
    expect(result.status).toBe(0)
    expect(result.stdout).toBe('done')
    expect(result.stderr).toContain('a callback threw')
    expect(result.stderr).toContain('callback boom')
    expect(result.stderr).toContain('Dropping monitor notification for owned: owner agent agent-7 has no notification callback')
  })
})
