// Drop-in fidelity (API.md §3): "Optional fields that are absent are `undefined`, never `null`".
// Driven by index.d.ts: every optional field (`x?: T`) of every interface the runtime hands out,
// and every result typed `… | undefined`, is checked on real objects, in states where it is
// absent. An interface or result added to the typings without a sample here fails the test.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

import {
  BackgroundShellRegistry,
  executeBackground,
  MonitorRegistry,
  normalizeMonitorCommand,
  readTaskOutput,
  readTaskOutputTail,
  RECOMMENDED_SIGNAL,
  recommendedSignal,
  type MonitorNotificationMeta,
  type RecoverCorrupt,
  type RecoverLost,
  type ShellNotificationMeta,
} from '../index.js'
import { isAlive, waitFor } from './support/process'
import { registration } from './support/registry'

const dts = readFileSync(join(__dirname, '..', 'index.d.ts'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '')

interface Field {
  name: string
  optional: boolean
  type: string
}

/** `export interface X { … }` → its fields, from the typings. */
function interfaces(): Map<string, Field[]> {
  const out = new Map<string, Field[]>()
  // An interface named as a class adds the JavaScript layer's methods to it: not a data shape.
  const classes = new Set([...dts.matchAll(/^export declare class (\w+)/gm)].map((m) => m[1]))
  for (const [, name, body] of dts.matchAll(/^export interface (\w+) \{\n([\s\S]*?)^\}/gm)) {
    if (classes.has(name)) continue
    const fields = [...body.matchAll(/^ {2}(\w+)(\??): (.+)$/gm)].map(([, field, q, type]) => ({ name: field, optional: q === '?', type }))
    out.set(name, fields)
  }
  return out
}

/** Functions and class methods whose result type includes `undefined`, as `Class.method` or `fn`. */
function undefinedResults(): string[] {
  const out: string[] = []
  const returnType = (line: string) => line.slice(line.lastIndexOf('): ') + 3)
  // A class's methods: those napi declares in it, and those merged into it by an interface of its
  // name (the JavaScript layer's, and those `registry_surface!` writes once for both registries).
  const classes = new Set([...dts.matchAll(/^export declare class (\w+)/gm)].map((m) => m[1]))
  for (const [, kind, cls, body] of dts.matchAll(/^export (declare class|interface) (\w+) \{\n([\s\S]*?)^\}/gm)) {
    if (kind === 'interface' && !classes.has(cls)) continue
    for (const [line, method] of body.matchAll(/^ {2}(\w+)\(.*$/gm)) {
      if (/\bundefined\b/.test(returnType(line))) out.push(`${cls}.${method}`)
    }
  }
  for (const [line, fn] of dts.matchAll(/^export declare function (\w+)\(.*$/gm)) {
    if (/\bundefined\b/.test(returnType(line))) out.push(fn)
  }
  return out
}

// Interfaces callers only hand to us; the runtime never builds them.
const INPUT_ONLY = new Set([
  'ExecuteBackgroundOptions',
  'LineBufferOptions',
  'MonitorCancelOptions',
  'MonitorRegistration',
  'MonitorRegistryOptions',
  'MonitorStartOptions',
  'MonitorToolParams',
  'MonitorValidationContext',
  'PersistOptions',
  'ReadTaskOutputOptions',
  'RecoverOptions',
  'ShellTaskRegistration',
  'TaskLimits',
  'TerminalOptions',
  'ThrottleOptions',
  'WaitForOptions',
])

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-optional-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Real objects of every output interface, in states where their optional fields are absent. */
async function samples(): Promise<Map<string, object[]>> {
  const out = new Map<string, object[]>()
  const add = (name: string, ...objects: object[]) => out.set(name, [...(out.get(name) ?? []), ...objects])

  // Monitors: fed, native running, native completed, native spawn failure; their notifications.
  const monitors = new MonitorRegistry({ throttle: false })
  const monitorMetas: MonitorNotificationMeta[] = []
  monitors.setNotificationCallback((_d, _m, meta) => monitorMetas.push(meta))
  const fed = monitors.register(registration({ monitorId: 'fed' }))
  monitors.emitEvent('fed', 'line')
  const running = monitors.start({ command: 'sleep 30' })
  const completed = monitors.start({ command: 'echo hi' })
  const spawnFailed = monitors.start({ command: 'true', cwd: join(scratch, 'missing') })
  add('MonitorTask', fed, running, { ...completed }, spawnFailed)
  await waitFor(() => completed.status !== 'running' && monitorMetas.some((m) => m.monitorId === completed.id && m.status !== 'running'), 10_000, 'monitor')
  add('MonitorTask', completed)
  monitors.complete('fed', null)
  add('MonitorTask', fed)
  // A task with limits (API.md §6.8): its usage while it runs and after.
  const limited = monitors.start({ command: 'sleep 30', limits: { maxProcesses: 10 } })
  add('TaskUsage', limited.usage!)
  monitors.cancel(limited.id)
  await waitFor(() => limited.status !== 'running', 10_000, 'limited monitor')
  add('TaskUsage', limited.usage!)
  add('MonitorTask', limited)
  // Waits: a match (line present), a timeout, a quiet and an exit (line absent).
  // `match` sees lines from the call on: the line comes after a pause, as in primitives.test.ts.
  const waiting = monitors.start({ command: 'sleep 0.2; echo ready; sleep 30' })
  add('WaitResult', await monitors.waitFor(waiting.id, { match: 'ready' }), await monitors.waitFor(completed.id))
  add('WaitResult', await monitors.waitFor(waiting.id, { quietMs: 50 }), await monitors.waitFor(running.id, { timeoutMs: 1 }))
  // A batch window with a digest: meta.lines and meta.droppedSince present.
  const lane = new MonitorRegistry({ throttle: { burst: 1, refillMs: 600_000 } })
  lane.setNotificationCallback((_d, _m, meta) => monitorMetas.push(meta))
  const batched = lane.start({ command: "printf 'a\\nb\\n'", batchMs: 10_000, maxBatchLines: 1, digest: true })
  await waitFor(() => monitorMetas.some((m) => m.monitorId === batched.id && m.type === 'terminal'), 10_000, 'batched monitor')
  monitors.abortAll({ notify: false })
  add('MonitorNotificationMeta', ...monitorMetas)
  add('RecommendedSignal', recommendedSignal(), RECOMMENDED_SIGNAL)
  add('TaskEnd', completed.end!, spawnFailed.end!, fed.end!, batched.end!)
  add('TaskEnd', ...monitorMetas.flatMap((m) => (m.end ? [m.end] : [])))

  // Shells: executeBackground running, completed, cancelled, spawn failure; a fed entry; notifications.
  const shells = new BackgroundShellRegistry()
  const shellMetas: ShellNotificationMeta[] = []
  shells.setNotificationCallback((_d, _m, meta) => shellMetas.push(meta))
  const dir = join(scratch, 'out')
  const ok = executeBackground({ command: 'echo hi', cwd: '/tmp', outputDir: dir, registry: shells })
  const long = executeBackground({ command: 'sleep 30', cwd: '/tmp', outputDir: dir, registry: shells })
  const broken = executeBackground({ command: 'true', cwd: join(scratch, 'missing'), outputDir: dir, registry: shells })
  add('BackgroundShellHandle', ok, long, broken)
  add('ShellTask', { ...shells.get(long.shellId)! }, shells.get(broken.shellId)!)
  shells.requestCancel(long.shellId)
  add('BackgroundShellResult', await ok.done, await long.done, await broken.done)
  // A settled notification (no `end`).
  const settling = executeBackground({ command: 'echo hi; sleep 30', cwd: '/tmp', outputDir: dir, registry: shells, settleMs: 100 })
  await waitFor(() => shellMetas.some((m) => m.shellId === settling.shellId && m.type === 'settled'), 10_000, 'settled shell')
  shells.requestCancel(settling.shellId)
  add('BackgroundShellResult', await settling.done)
  add('TaskEnd', (await long.done).end, (await ok.done).end)
  // A terminal shell's screen (no title set) and its cursor.
  const tty = executeBackground({ command: 'echo on a terminal', cwd: '/tmp', outputDir: dir, registry: shells, terminal: true })
  await tty.done
  const screen = shells.screen(tty.shellId)!
  add('ScreenSnapshot', screen)
  add('CursorPosition', screen.cursor)
  add('ShellTask', ...shells.getAll())
  writeFileSync(join(scratch, 'fed.output'), '')
  const fedShell = shells.register({
    shellId: 'fed',
    command: 'npm test',
    cwd: '/repo',
    status: 'running',
    startTime: 1,
    outputPath: join(scratch, 'fed.output'),
    abortController: new AbortController(),
  })
  add('ShellTask', { ...fedShell })
  shells.cancel('fed', 2)
  add('ShellTask', fedShell)
  add('ShellNotificationMeta', ...shellMetas)

  // Persisted tasks: recover() on a state directory holding a corrupt file and the record of a
  // task whose keeper is gone (lost). The record is a real one, saved while its task ran and put
  // back after its end was reported and its state removed.
  const stateDir = mkdtempSync(join(scratch, 'state-'))
  const owner = new MonitorRegistry()
  const gone = owner.start({ command: 'sleep 30', persist: { stateDir, leaseMs: 5_000 } })
  const record = join(stateDir, `${gone.id}.task.json`)
  const saved = readFileSync(record, 'utf8')
  const keeperPid = (JSON.parse(saved) as { keeper: { pid: number } }).keeper.pid
  owner.cancel(gone.id)
  await waitFor(() => !existsSync(record), 10_000, 'the cancelled persisted task to be forgotten')
  // The keeper exits just after its end was read: the record names a process that is gone only then.
  await waitFor(() => !isAlive(keeperPid), 10_000, 'the keeper to exit')
  writeFileSync(record, saved, { mode: 0o600 })
  writeFileSync(join(stateDir, 'bad.task.json'), '{"version":1,', { mode: 0o600 })
  // A process forked at this moment by another thread shares the released lock until it execs,
  // so the task can be `busy` for an instant: a busy task is left untouched, and asking again is safe.
  const recovering = new MonitorRegistry()
  const found: { lost: RecoverLost[]; corrupt: RecoverCorrupt[]; adopted: unknown[]; busy: string[] } = { lost: [], corrupt: [], adopted: [], busy: [] }
  await waitFor(
    () => {
      const round = recovering.recover({ stateDir })
      found.lost.push(...round.lost)
      found.corrupt.push(...round.corrupt)
      found.adopted.push(...round.adopted)
      found.busy = round.busy
      return round.busy.length === 0
    },
    10_000,
    'the lock to be free',
  )
  expect(found.lost.map((l) => l.id), JSON.stringify(found)).toEqual([gone.id])
  expect(found.corrupt).toHaveLength(1)
  add('RecoverLost', ...found.lost)
  add('RecoverCorrupt', ...found.corrupt)
  add('MonitorTask', gone)

  // Pure results.
  add('NormalizedMonitorCommand', normalizeMonitorCommand('tail -f log &'))
  const file = join(scratch, 'tail.output')
  writeFileSync(file, 'some output\n')
  add('OutputTailText', readTaskOutputTail(file)!)
  add('OutputTailError', readTaskOutputTail(join(scratch, 'missing', 'x'))!)
  add('TaskOutputRead', readTaskOutput(file), readTaskOutput(file, { grep: 'some' }))
  add('OutputTailError', readTaskOutput(join(scratch, 'missing', 'x')))
  return out
}

/** Optional fields this host never leaves out, each for why: the absence is checked elsewhere. */
const NEVER_ABSENT_HERE: Record<string, string[]> = {
  // Absent only where the host cannot read them (cgroup v2 before Linux 5.19 has no
  // memory.peak; a v1 host without the cpuacct hierarchy); the Rust test
  // `usage_is_none_where_nothing_can_be_read` checks that case, and the binding writes it with
  // the same helper as every other optional field.
  TaskUsage: ['cpuMs', 'peakMemoryBytes'],
}

/** How each `… | undefined` result is asked for something it does not have. */
const ABSENT_CASES: Record<string, () => unknown[]> = {
  'BackgroundShellRegistry.get': () => [new BackgroundShellRegistry().get('nope')],
  'MonitorRegistry.screen': () => {
    const registry = new MonitorRegistry()
    registry.register(registration({ monitorId: 'fed' }))
    return [registry.screen('fed')]
  },
  'BackgroundShellRegistry.screen': () => {
    const registry = new BackgroundShellRegistry()
    registry.register({
      shellId: 'fed',
      command: 'npm test',
      cwd: '/repo',
      status: 'running',
      startTime: 1,
      outputPath: join(scratch, 'screen.output'),
      abortController: new AbortController(),
    })
    return [registry.screen('fed')]
  },
  'MonitorRegistry.get': () => {
    const registry = new MonitorRegistry()
    registry.register(registration({ monitorId: 'other' }))
    return [registry.get('nope'), registry.get('')]
  },
  readTaskOutputTail: () => {
    const empty = join(scratch, 'empty.output')
    const blank = join(scratch, 'blank.output')
    writeFileSync(empty, '')
    writeFileSync(blank, '\x1b[31m\r\n  \n')
    return [readTaskOutputTail(empty), readTaskOutputTail(blank), readTaskOutputTail('/dev/null'), readTaskOutputTail(scratch)]
  },
}

describe('absent optional values are undefined, never null', () => {
  const declared = interfaces()

  it('the typings were parsed', () => {
    expect(declared.get('MonitorTask')?.find((f) => f.name === 'pid')).toEqual({ name: 'pid', optional: true, type: 'number' })
    expect(undefinedResults()).toEqual(expect.arrayContaining(['MonitorRegistry.get', 'BackgroundShellRegistry.get', 'readTaskOutputTail']))
  })

  it('every result typed `| undefined` gives undefined when it has nothing', () => {
    const results = undefinedResults()
    expect(Object.keys(ABSENT_CASES).sort()).toEqual([...results].sort())
    for (const name of results) {
      for (const value of ABSENT_CASES[name]()) expect(value, name).toBeUndefined()
    }
  })

  it('every optional field of every output interface is undefined when absent, and no field is null unless typed so', async () => {
    const objects = await samples()
    const outputs = [...declared.keys()].filter((name) => !INPUT_ONLY.has(name))
    expect([...objects.keys()].sort()).toEqual(outputs.sort())
    for (const name of outputs) {
      const fields = declared.get(name)!
      const absentSomewhere = new Set<string>()
      for (const object of objects.get(name)!) {
        const values = object as Record<string, unknown>
        for (const field of fields) {
          const value = values[field.name]
          if (!/\bnull\b/.test(field.type)) expect(value, `${name}.${field.name}`).not.toBeNull()
          if (value === undefined) {
            expect(field.optional, `${name}.${field.name} is required but missing`).toBe(true)
            absentSomewhere.add(field.name)
          }
        }
        // Keys the typings do not name must not carry null either.
        for (const [key, value] of Object.entries(values)) {
          if (!fields.some((f) => f.name === key)) expect(value, `${name}.${key} (undeclared)`).not.toBeNull()
        }
      }
      // Each optional field was really seen absent, so the check above covered it.
      const exempt = NEVER_ABSENT_HERE[name] ?? []
      const neverAbsent = fields.filter((f) => f.optional && !/\bnull\b/.test(f.type) && !absentSomewhere.has(f.name) && !exempt.includes(f.name))
      expect(neverAbsent.map((f) => f.name), name).toEqual([])
    }
  })
})
