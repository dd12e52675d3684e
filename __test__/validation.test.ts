// Trustworthy under any caller: values that cannot work are refused up front,
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

describe('fed register(): times and counts that cannot work are refused', () => {
  const bad: [string, unknown, ErrorClass][] = [
    ['startTime', Number.NaN, RangeError],
    ['startTime', Number.POSITIVE_INFINITY, RangeError],
    ['startTime', -1, RangeError],
    ['startTime', 1e20, RangeError],
    ['startTime', '1000', TypeError],
    ['lastEventTime', Number.NaN, RangeError],
    ['lastEventTime', -5, RangeError],
    ['eventCount', -1, RangeError],
    ['eventCount', 1.5, RangeError],
    ['eventCount', Number.NaN, RangeError],
    ['eventCount', 2 ** 53, RangeError],
    ['maxEvents', 0, RangeError],
    ['maxEvents', -3, RangeError],
    ['maxEvents', 2.5, RangeError],
    ['maxEvents', Number.NaN, RangeError],
    ['maxEvents', Number.POSITIVE_INFINITY, RangeError],
    ['maxEvents', 1e20, RangeError],
    ['idleTimeoutMs', 0, RangeError],
    ['idleTimeoutMs', -1, RangeError],
    ['idleTimeoutMs', 1.5, RangeError],
    ['idleTimeoutMs', Number.NaN, RangeError],
    ['idleTimeoutMs', Number.POSITIVE_INFINITY, RangeError],
    ['idleTimeoutMs', 2 ** 31, RangeError],
    ['droppedLines', -1, RangeError],
    ['droppedLines', Number.NaN, RangeError],
    ['maxEvents', null, TypeError],
  ]

  it.each(bad)('MonitorRegistry: %s = %s', (field, value, type) => {
    const { registry, calls } = monitorRegistry()
    const ac = new AbortController()
    const reg = { ...registration({ abortController: ac }), [field]: value }
    expectRefused(() => registry.register(reg as never), type, new RegExp(`"registration\\.${field}"`), field)
    expect(registry.getAll()).toEqual([])
    expect(registry.get(reg.monitorId)).toBeUndefined()
    expect(calls).toEqual([])
    expect(ac.signal.aborted).toBe(false)
    expect((reg as { id?: string }).id).toBeUndefined()
  })

  it('MonitorRegistry keeps what TypeScript callers pass, and the extremes that work', () => {
    const { registry } = monitorRegistry()
    const now = Date.now()
    const typical = registry.register(registration({ monitorId: 'typical', startTime: now, lastEventTime: now, maxEvents: 10_000, idleTimeoutMs: 600_000 }))
    expect(typical).toMatchObject({ status: 'running', maxEvents: 10_000, idleTimeoutMs: 600_000, startTime: now })
    const extremes = registry.register(
      registration({
        monitorId: 'extremes',
        startTime: 0,
        lastEventTime: 8.64e15,
        eventCount: 0,
        maxEvents: Number.MAX_SAFE_INTEGER,
        idleTimeoutMs: 2 ** 31 - 1,
        droppedLines: Number.MAX_SAFE_INTEGER,
      }),
    )
    expect(extremes.status).toBe('running')
    const minimal = registry.register({ monitorId: 'minimal', command: 'x', abortController: new AbortController() } as never)
    expect(minimal).toMatchObject({ status: 'running', eventCount: 0 })
    expect(registry.getAll().map((e) => e.id)).toEqual(['typical', 'extremes', 'minimal'])
  })

  it('BackgroundShellRegistry: a bad startTime is refused and no sidecar is written', () => {
    const { registry, calls } = shellRegistry()
    for (const [value, type] of [
      [Number.NaN, RangeError],
      [Number.NEGATIVE_INFINITY, RangeError],
      [-1, RangeError],
      [1e20, RangeError],
      ['soon', TypeError],
    ] as [unknown, ErrorClass][]) {
      const dir = fresh('reg')
      mkdirSync(dir)
      const reg = shellRegistration(dir, { startTime: value as number })
      expectRefused(() => registry.register(reg), type, /"registration\.startTime"/, String(value))
      expect(readdirSync(dir), String(value)).toEqual([])
    }
    expect(registry.getAll()).toEqual([])
    expect(calls).toEqual([])
  })

  it('BackgroundShellRegistry: a bad endTime is refused and the entry keeps running', () => {
    const { registry, calls } = shellRegistry()
    const dir = fresh('end')
    mkdirSync(dir)
    const ac = new AbortController()
    const entry = registry.register(shellRegistration(dir, { abortController: ac }))
    const sidecar = () => JSON.parse(readFileSync(statusFilePathFor(entry.outputPath), 'utf8'))
    calls.length = 0
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, -1, 8.64e15 + 1]) {
      expectRefused(() => registry.complete('s', 0, value), RangeError, /"endTime"/, `complete ${value}`)
      expectRefused(() => registry.fail('s', 'boom', value), RangeError, /"endTime"/, `fail ${value}`)
      expectRefused(() => registry.cancel('s', value), RangeError, /"endTime"/, `cancel ${value}`)
    }
    expect(calls).toEqual([])
    expect(ac.signal.aborted).toBe(false)
    expect(entry).toMatchObject({ status: 'running', endTime: undefined })
    expect(sidecar().status).toBe('running')
    registry.complete('s', 0, 0)
    expect(entry).toMatchObject({ status: 'completed', endTime: 0 })
    expect(sidecar()).toMatchObject({ status: 'completed', endTime: '1970-01-01T00:00:00.000Z' })
  })
})

function shellRegistration(dir: string, over: Partial<ShellTaskRegistration> = {}): ShellTaskRegistration {
  return {
    shellId: 's',
    command: 'npm test',
    cwd: '/repo',
    status: 'running',
    startTime: Date.now(),
    outputPath: join(dir, 'shell-s.output'),
    abortController: new AbortController(),
    ...over,
  }
}

describe('validateMonitorParams: wrong types throw, a NUL directory is refused', () => {
  const ctx = { workspaceDirs: ['/srv/project-a'], userSkillsDirs: ['/home/user/.claude/skills'] }

  it('a description that is not a string is a TypeError naming params.description', () => {
    for (const description of [42, true, {}, ['x'], Symbol('d')]) {
      expectRefused(
        () => validateMonitorParams({ command: 'tail -f log', description } as never, ctx),
        TypeError,
        /"params\.description" property must be of type string/,
        String(description),
      )
    }
    // Absent, null (the TypeScript tool's `description || command`) and strings are fine.
    for (const description of [undefined, null, '', 'watch logs']) {
      expect(validateMonitorParams({ command: 'tail -f log', description } as never, ctx)).toBeNull()
    }
  })

  it('a directory with a NUL byte is rejected with its own text', () => {
    for (const directory of ['/srv/project-a/sub\0dir', '/srv/project-a\0', 'rel\0']) {
      expect(validateMonitorParams({ command: 'tail -f log', directory }, ctx)).toBe('Directory must not contain null bytes.')
    }
    expect(validateMonitorParams({ command: 'tail -f log', directory: '/srv/project-a/sub' }, ctx)).toBeNull()
  })

  it('a falsy directory is no directory, as in the TypeScript tool (`if (params.directory)`)', () => {
    for (const directory of ['', null, false, 0, -0, Number.NaN]) {
      expect(validateMonitorParams({ command: 'tail -f log', directory } as never, ctx), String(directory)).toBeNull()
    }
    // Any other non-string is still a directory that is not an absolute path (never a throw).
    for (const directory of [1, true, {}, ['/srv/project-a']]) {
      expect(validateMonitorParams({ command: 'tail -f log', directory } as never, ctx), String(directory)).toBe(
        'Directory must be an absolute path.',
      )
    }
  })
})

describe('classes called without new', () => {
  // Every class the typings export, so a new one is covered too.
  const dts = readFileSync(join(__dirname, '..', 'index.d.ts'), 'utf8')
  const classes = [...dts.matchAll(/^export declare class (\w+)/gm)].map((m) => m[1])

  it('the typings export the expected classes', () => {
    expect(classes).toEqual(expect.arrayContaining(['MonitorRegistry', 'BackgroundShellRegistry', 'LineBuffer']))
  })

  it.each(classes)('%s throws a TypeError without new, and works with it', (name) => {
    const Class = (ts as unknown as Record<string, new () => object>)[name]
    const asFunction = Class as unknown as (this: unknown) => unknown
    const message = `Class constructor ${name} cannot be invoked without 'new'`
    const instance = new Class()
    const receivers: [string, unknown][] = [
      ['undefined', undefined],
      ['globalThis', globalThis],
      ['{}', {}],
      ['Object.create(null)', Object.create(null)],
      ['an instance', instance],
      ['42', 42],
    ]
    for (const [label, receiver] of receivers) {
      const error = thrown(() => asFunction.call(receiver))
      expect(error, label).toBeInstanceOf(TypeError)
      expect(error.message).toBe(message)
    }
    // (`Class.call(Object.create(Class.prototype))` cannot be told from `new Class()` without
    // `new.target`, which napi-rs does not pass: it yields a working instance.)
    // Nothing was attached to the receivers: new instances and subclasses still work.
    const again = new Class()
    expect(again).toBeInstanceOf(Class)
    expect(Object.getPrototypeOf(again)).toBe(Class.prototype)
    class Sub extends (Class as new () => object) {}
    expect(new Sub()).toBeInstanceOf(Class)
    expect(Reflect.construct(Class, [])).toBeInstanceOf(Class)
  })

  it('instances keep working after the refused calls', () => {
    expect(() => (MonitorRegistry as unknown as () => void)()).toThrowError(TypeError)
    expect(() => (LineBuffer as unknown as () => void)()).toThrowError(TypeError)
    const registry = new MonitorRegistry()
    monitors.push(registry)
    expect(registry.register(registration({ monitorId: 'after' })).status).toBe('running')
    expect(new LineBuffer().push('a\nb')).toEqual(['a'])
    expect(new BackgroundShellRegistry().getAll()).toEqual([])
  })
})
