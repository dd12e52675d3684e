// No child outlives the Node process, however it ends (CONTRACT.md §4 item 6):
// a host script starts quiet children (sleep, which would not die of SIGPIPE)
// and ends in each of five ways; afterwards none of their pids is alive.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import { isAlive, waitFor } from './support/process'

const host = join(__dirname, 'fixtures', 'lifetime-host.js')

interface HostRun {
  pids: number[]
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill: (signal: NodeJS.Signals) => void
}

function runHost(mode: string): Promise<HostRun> {
  const child = spawn(process.execPath, [host, mode], { stdio: ['ignore', 'pipe', 'pipe'] })
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
  expect(pids.length).toBe(4)
  for (const pid of pids) {
    expect(pid).toBeGreaterThan(1)
    await waitFor(() => !isAlive(pid), 5000, `pid ${pid} to die`)
  }
}

describe('children die with the host', () => {
  it('normal end: the host exits by itself (a monitor does not keep it alive) and kills them', async () => {
    const run = await runHost('normal')
    const result = await Promise.race([
      run.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 3000)),
    ])
    if (result === 'hung') run.kill('SIGKILL')
    expect(result).toEqual({ code: 0, signal: null })
    await expectAllDead(run.pids)
  })

  it('process.exit()', async () => {
    const run = await runHost('exit')
    expect(await run.exited).toEqual({ code: 0, signal: null })
    await expectAllDead(run.pids)
  })

  it('an uncaught exception', async () => {
    const run = await runHost('uncaught')
    expect((await run.exited).code).toBe(1)
    await expectAllDead(run.pids)
  })

  it('SIGTERM with the default action', async () => {
    const run = await runHost('sigterm')
    run.kill('SIGTERM')
    expect((await run.exited).signal).toBe('SIGTERM')
    await expectAllDead(run.pids)
  })

  it('SIGKILL', async () => {
    const run = await runHost('sigkill')
    run.kill('SIGKILL')
    expect((await run.exited).signal).toBe('SIGKILL')
    await expectAllDead(run.pids)
  })
})
