// Trustworthy under any caller (issue 9): values that cannot work are refused up front,
// as a TypeError (wrong type) or RangeError (unusable value) naming the field, and
// nothing is spawned, registered or written when one is thrown.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import * as ts from '../index.js'
import {
  BackgroundShellRegistry,
  executeBackground,
  LineBuffer,
  MonitorRegistry,
  statusFilePathFor,
  validateMonitorParams,
  type ExecuteBackgroundOptions,
  type MonitorStartOptions,
  type ShellTaskRegistration,
} from '../index.js'
import { waitFor } from './support/process'
import { registration } from './support/registry'

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-validation-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let count = 0
const fresh = (what: string) => join(scratch, `${what}-${++count}`)

const monitors: MonitorRegistry[] = []
const shells: BackgroundShellRegistry[] = []
afterEach(() => {
  for (const r of monitors.splice(0)) r.abortAll({ notify: false })
  for (const r of shells.splice(0)) r.abortAll()
})

/** A monitor registry that records every callback it makes. */
function monitorRegistry() {
  const registry = new MonitorRegistry()
  monitors.push(registry)
  const calls: string[] = []
  registry.setRegisterCallback((e) => calls.push(`register:${e.id}`))
  registry.setStatusChangeCallback((e) => calls.push(`status:${e?.id}:${e?.status}`))
  registry.setNotificationCallback((_d, _m, meta) => calls.push(`notify:${meta.monitorId}:${meta.status}`))
  return { registry, calls }
}

function shellRegistry() {
  const registry = new BackgroundShellRegistry()
  shells.push(registry)
  const calls: string[] = []
  registry.setRegisterCallback((e) => calls.push(`register:${e.id}`))
  registry.setStatusChangeCallback((e) => calls.push(`status:${e?.id}:${e?.status}`))
  registry.setNotificationCallback((_d, _m, meta) => calls.push(`notify:${meta.shellId}:${meta.status}`))
  return { registry, calls }
}

type ErrorClass = typeof TypeError | typeof RangeError

function thrown(call: () => unknown): Error {
  try {
    call()
  } catch (e) {
    return e as Error
  }
  throw new Error('expected a throw')
}

function expectRefused(call: () => unknown, type: ErrorClass, field: RegExp, what: string) {
  const error = thrown(call)
  expect(error, what).toBeInstanceOf(type)
  expect(error.message, what).toMatch(field)
}

describe('NUL bytes and unusable environment names never reach a process', () => {
  it('start() refuses them before spawning or registering', async () => {
    const { registry, calls } = monitorRegistry()
    // Each command would leave its marker file if it ever ran.
    const marker = () => fresh('monitor-ran')
    const markers: string[] = []
    const run = (extra: Partial<MonitorStartOptions>, command?: string) => {
      const m = marker()
      markers.push(m)
      return () => registry.start({ command: command ?? `touch ${m}`, cwd: '/tmp', ...extra })
    }
    const cases: [() => unknown, ErrorClass, RegExp][] = [
      [run({}, `touch ${marker()}\0x`), RangeError, /"options\.command" property must be a string without null bytes/],
      [run({ cwd: '/tmp\0/x' }), RangeError, /"options\.cwd" property must be a string without null bytes/],
      [run({ env: { A: 'x\0y' } }), RangeError, /"options\.env\.A" property must be a string without null bytes/],
      [run({ env: { 'A\0B': 'x' } }), RangeError, /"options\.env\["A\\u0000B"\]" property name must not contain null bytes/],
      [run({ env: { 'A=B': 'x' } }), RangeError, /"options\.env\["A=B"\]" property name must not contain "="/],
      [run({ env: { '': 'x' } }), RangeError, /"options\.env\[""\]" property name must not be empty/],
      [run({ env: { OK: 'fine', 'B=': 'x' } }), RangeError, /"options\.env\["B="\]"/],
    ]
    for (const [call, type, field] of cases) expectRefused(call, type, field, field.source)
    expect(registry.getAll()).toEqual([])
    expect(calls).toEqual([])

    // A valid start with the same shape runs; the refused ones, started before it, never did.
    const control = fresh('monitor-control')
    const entry = registry.start({ command: `touch ${control}`, cwd: '/tmp', env: { A: 'x=y', 'lower.case-name': 'ok' } })
    await waitFor(() => entry.status !== 'running' && calls.some((c) => c.startsWith(`notify:${entry.id}:`)), 10_000, 'control')
    expect(entry.status).toBe('completed')
    expect(existsSync(control)).toBe(true)
    for (const m of markers) expect(existsSync(m), m).toBe(false)
  })

  it('executeBackground() refuses them before creating any file or process', async () => {
    const { registry, calls } = shellRegistry()
    const markers: string[] = []
    const dirs: string[] = []
    const run = (extra: Partial<ExecuteBackgroundOptions>, command?: string) => {
      const m = fresh('shell-ran')
      const dir = fresh('shell-out')
      markers.push(m)
      dirs.push(dir)
      return () => executeBackground({ command: command ?? `touch ${m}`, cwd: '/tmp', outputDir: dir, registry, ...extra })
    }
    const cases: [() => unknown, ErrorClass, RegExp][] = [
      [run({}, 'touch x\0y'), RangeError, /"options\.command" property must be a string without null bytes/],
      [run({ cwd: '/tmp\0' }), RangeError, /"options\.cwd" property must be a string without null bytes/],
      [run({ env: { A: '\0' } }), RangeError, /"options\.env\.A" property must be a string without null bytes/],
      [run({ env: { 'A\0': 'x' } }), RangeError, /"options\.env\["A\\u0000"\]" property name must not contain null bytes/],
      [run({ env: { 'A=B': 'x' } }), RangeError, /"options\.env\["A=B"\]" property name must not contain "="/],
      [run({ env: { '': 'x' } }), RangeError, /"options\.env\[""\]" property name must not be empty/],
      [run({ outputDir: '' }), RangeError, /"options\.outputDir" property must be a non-empty path/],
      [run({ outputDir: join(scratch, 'out\0dir') }), RangeError, /"options\.outputDir" property must be a string without null bytes/],
    ]
    const cwdBefore = readdirSync(process.cwd())
    for (const [call, type, field] of cases) expectRefused(call, type, field, field.source)
    expect(registry.getAll()).toEqual([])
    expect(calls).toEqual([])
    for (const dir of dirs) expect(existsSync(dir), dir).toBe(false)
    // outputDir '' used to put shell-<id>.output in the current directory.
    expect(readdirSync(process.cwd())).toEqual(cwdBefore)

    const control = fresh('shell-control')
    const handle = executeBackground({ command: `touch ${control}`, cwd: '/tmp', outputDir: fresh('shell-out'), registry, env: { A: 'x=y' } })
    expect((await handle.done).status).toBe('completed')
    expect(existsSync(control)).toBe(true)
    for (const m of markers) expect(existsSync(m), m).toBe(false)
  })
})

describe('executeBackground shellId: one safe file name component', () => {
  it('refuses ids that are not, naming options.shellId, before anything exists', () => {
    const { registry, calls } = shellRegistry()
    const bad = ['', '/', 'a/b', '../x', 'a\\b', 'a\0b', '.', '..', 'x'.repeat(201), 'é'.repeat(101), 'c:x', 'a|b', 'tab\there', 'nl\n']
    for (const shellId of bad) {
      const dir = fresh('id-out')
      expectRefused(
        () => executeBackground({ command: 'true', cwd: '/tmp', outputDir: dir, registry, shellId }),
        RangeError,
        /"options\.shellId" property/,
        JSON.stringify(shellId),
      )
      expect(existsSync(dir), JSON.stringify(shellId)).toBe(false)
    }
    expect(registry.getAll()).toEqual([])
    expect(calls).toEqual([])
  })

  it('accepts the longest id and ids with dots, spaces and non-ASCII letters', async () => {
    const { registry } = shellRegistry()
    const dir = fresh('id-ok')
    for (const shellId of ['x'.repeat(200), 'é'.repeat(100), 'a..b', '...', 'task 1 (copy)', 'bg_😀']) {
      const handle = executeBackground({ command: 'echo ok', cwd: '/tmp', outputDir: dir, registry, shellId })
      expect(handle.outputPath).toBe(join(dir, `shell-${shellId}.output`))
      expect((await handle.done).status, shellId).toBe('completed')
      expect(readFileSync(handle.outputPath, 'utf8')).toBe('ok\n')
      expect(JSON.parse(readFileSync(handle.statusPath, 'utf8')).status).toBe('completed')
    }
  })
})

