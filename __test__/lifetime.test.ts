// No child outlives the Node process, however it ends (CONTRACT.md §4 item 6):
// a host script starts quiet children (sleep, which would not die of SIGPIPE)
// and ends in each of five ways; afterwards none of their pids is alive.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { isAlive, waitFor } from './support/process'

const host = join(__dirname, 'fixtures', 'lifetime-host.js')

interface HostRun {
  pids: number[]
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill: (signal: NodeJS.Signals) => void
}

// A host left over by a failed test must not outlive the run.
const hosts: ReturnType<typeof spawn>[] = []
afterEach(() => {
  for (const child of hosts.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

function runHost(mode: string, kind: 'monitor' | 'shell' | 'terminal', extra?: 'kill-watchdog'): Promise<HostRun> {
  const child = spawn(process.execPath, [host, mode, kind, ...(extra ? [extra] : [])], { stdio: ['ignore', 'pipe', 'pipe'] })
  hosts.push(child)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const line = out.split('\n')[0]
      if (out.includes('\n')) resolve({ pids: JSON.parse(line), exited, kill: (s) => child.kill(s) })
    })
    exited.then(() => {
      if (!out.includes('\n')) reject(new Error(`host ended before reporting pids: ${stderr}`))
    })
  })
}

async function expectAllDead(pids: number[]) {
  expect(pids.length).toBeGreaterThanOrEqual(3)
  for (const pid of pids) {
    expect(pid).toBeGreaterThan(1)
    await waitFor(() => !isAlive(pid), 5000, `pid ${pid} to die`)
  }
}

describe.each(['monitor', 'shell', 'terminal'] as const)('%s children die with the host', (kind) => {
  it('normal end: the host exits by itself (monitors never hold it; an unref\'d shell does not) and kills them', async () => {
    const run = await runHost('normal', kind)
    const result = await Promise.race([
      run.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 3000)),
    ])
    if (result === 'hung') run.kill('SIGKILL')
    expect(result).toEqual({ code: 0, signal: null })
    await expectAllDead(run.pids)
  })

  it('process.exit()', async () => {
    const run = await runHost('exit', kind)
    expect(await run.exited).toEqual({ code: 0, signal: null })
    await expectAllDead(run.pids)
  })

  it('an uncaught exception', async () => {
    const run = await runHost('uncaught', kind)
    expect((await run.exited).code).toBe(1)
    await expectAllDead(run.pids)
  })

  it('SIGTERM with the default action', async () => {
    const run = await runHost('sigterm', kind)
    run.kill('SIGTERM')
    expect((await run.exited).signal).toBe('SIGTERM')
    await expectAllDead(run.pids)
  })

  it('SIGKILL', async () => {
    const run = await runHost('sigkill', kind)
    run.kill('SIGKILL')
    expect((await run.exited).signal).toBe('SIGKILL')
    await expectAllDead(run.pids)
  })

  it('SIGKILL after the orphan watchdog itself was SIGKILLed (it is replaced at once)', async () => {
    const run = await runHost('sigkill', kind, 'kill-watchdog')
    run.kill('SIGKILL')
    expect((await run.exited).signal).toBe('SIGKILL')
    await expectAllDead(run.pids)
  })
})

it('a running background shell keeps Node alive until it is done', async () => {
  const child = spawn(process.execPath, [join(__dirname, 'fixtures', 'keeps-alive.js')], { stdio: ['ignore', 'pipe', 'inherit'] })
  hosts.push(child)
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const code = await new Promise((resolve) => child.on('exit', resolve))
  expect(code).toBe(0)
  const { readFileSync } = await import('node:fs')
  // Had Node exited at once, the exit hook would have killed the shell before it printed.
  expect(readFileSync(out.trim(), 'utf8')).toBe('finished\n')
})
