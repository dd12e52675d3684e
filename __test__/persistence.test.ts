// Persisted tasks (docs/persistence.md): a task started with `persist` runs
// under a detached keeper, outlives its host however the host ends, keeps
// writing its output, and is taken over by the next host's recover(). Every
// test runs real hosts (fixtures/persist-host.js) and real keepers, with a
// short lease as the backstop; afterEach recovers and cancels whatever is left.
import { spawn } from 'node:child_process'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { BackgroundShellRegistry, executeBackground, MonitorRegistry, readTaskOutput } from '../index.js'
import { isAlive, waitFor } from './support/process'

const hostScript = join(__dirname, 'fixtures', 'persist-host.js')
const LEASE_MS = 5000

type Kind = 'monitor' | 'shell'

interface Started {
  id: string
  pid: number
  child: number
  output: string
  tag: string
  keeper: number
  sibling: number
}

const dirs: string[] = []
const hosts: ReturnType<typeof spawn>[] = []
const strangers: number[] = []

function newStateDir(): string {
  // mkdtemp creates the directory 0700, as a state directory must be.
  const dir = mkdtempSync(join(tmpdir(), 'taskstream-persist-'))
  dirs.push(dir)
  return dir
}

/** Pids of live processes whose environment carries TASKSTREAM_TASK_ID=<tag>. */
function tagged(tag: string): number[] {
  const needle = `TASKSTREAM_TASK_ID=${tag}\0`
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (`${readFileSync(`/proc/${name}/environ`, 'latin1')}\0`.includes(needle) && isAlive(Number(name))) found.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

afterEach(async () => {
  for (const child of hosts.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  for (const pid of strangers.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  // Whatever a test left running is taken over and cancelled; the lease ends it otherwise.
  for (const dir of dirs.splice(0)) {
    if (!existsSync(dir)) continue
    const monitors = new MonitorRegistry()
    const shells = new BackgroundShellRegistry()
    const pids: number[] = []
    for (const t of monitors.recover({ stateDir: dir }).adopted) {
      pids.push(t.pid!)
      monitors.cancel(t.monitorId)
    }
    for (const t of shells.recover({ stateDir: dir }).adopted) {
      pids.push(t.pid!)
      shells.cancel(t.shellId, Date.now())
    }
    for (const pid of pids) await waitFor(() => !isAlive(pid), 10_000, `leftover task ${pid} to end`)
  }
})

function runHost(args: string[]): { line: Promise<string>; exited: Promise<{ code: number | null; signal: string | null }>; kill: (s: NodeJS.Signals) => void } {
  const child = spawn(process.execPath, [hostScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  hosts.push(child)
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const line = new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve(out.split('\n')[0])
    })
    exited.then(() => {
      if (!out.includes('\n')) reject(new Error(`host ended before reporting: ${stderr}`))
    })
  })
  return { line, exited, kill: (s) => child.kill(s) }
}

async function startHost(mode: string, kind: Kind, dir: string, extra = '-', command?: string, leaseMs = LEASE_MS) {
  const host = runHost([mode, kind, dir, String(leaseMs), extra, ...(command ? [command] : [])])
  const started: Started = JSON.parse(await host.line)
  return { ...host, started }
}

/** The highest `tick <n>` in the file. */
function lastTick(path: string): number {
  const ticks = [...readFileSync(path, 'utf8').matchAll(/tick (\d+)/g)].map((m) => Number(m[1]))
  return ticks.length ? Math.max(...ticks) : -1
}

async function endHost(host: Awaited<ReturnType<typeof startHost>>, mode: string) {
  if (mode === 'sigterm') host.kill('SIGTERM')
  if (mode === 'sigkill') host.kill('SIGKILL')
  const result = await Promise.race([host.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 10_000))])
  expect(result).not.toBe('hung')
  return result as { code: number | null; signal: string | null }
}

async function expectGone(started: Started) {
  await waitFor(() => !isAlive(started.pid), 10_000, `task ${started.pid} to end`)
  if (started.child) await waitFor(() => !isAlive(started.child), 10_000, `grandchild ${started.child} to end`)
  await waitFor(() => tagged(started.tag).length === 0, 10_000, `no process tagged ${started.tag}`)
  await waitFor(() => !isAlive(started.keeper), 10_000, `keeper ${started.keeper} to end`)
}

const deaths: [string, string, (r: { code: number | null; signal: string | null }) => void][] = [
  ['normal', '-', (r) => expect(r).toEqual({ code: 0, signal: null })],
  ['exit', '-', (r) => expect(r).toEqual({ code: 0, signal: null })],
  ['uncaught', '-', (r) => expect(r.code).toBe(1)],
  ['sigterm', '-', (r) => expect(r.signal).toBe('SIGTERM')],
  ['sigkill', '-', (r) => expect(r.signal).toBe('SIGKILL')],
  ['sigkill', 'kill-watchdog', (r) => expect(r.signal).toBe('SIGKILL')],
]

describe.each(['monitor', 'shell'] as const)('a persisted %s dev server', (kind) => {
  it.each(deaths)('survives its host ending by %s (%s), keeps writing its output, and the next host recovers and stops it', async (mode, extra, check) => {
    const dir = newStateDir()
    const host = await startHost(mode, kind, dir, extra)
    const { started } = host
    check(await endHost(host, mode))
    // The task that was not persisted died with its host; the persisted one runs on.
    await waitFor(() => !isAlive(started.sibling), 10_000, `the non-persisted sibling ${started.sibling} to die`)
    expect(isAlive(started.pid)).toBe(true)
    expect(isAlive(started.keeper)).toBe(true)
    // Output keeps reaching the file with no host at all.
    const before = lastTick(started.output)
    await waitFor(() => lastTick(started.output) >= before + 3, 10_000, 'more ticks in the output file')

    const registry = kind === 'monitor' ? new MonitorRegistry() : new BackgroundShellRegistry()
    const result = registry.recover({ stateDir: dir })
    expect(result.lost).toEqual([])
    expect(result.corrupt).toEqual([])
    expect(result.adopted).toHaveLength(1)
    const task = result.adopted[0] as { pid?: number; status: string }
    expect(task.pid).toBe(started.pid)
    expect(task.status).toBe('running')
    // The recovered task is followed like an own task: a wait sees its new lines.
    const waited = await registry.waitFor(started.id, { match: 'tick \\d+', timeoutMs: 10_000 })
    expect(waited.reason).toBe('match')
    if (kind === 'shell') {
      // Everything written while no host ran is in the output file, for readTaskOutput.
      const read = readTaskOutput(started.output) as { text: string }
      expect(read.text).toContain(`tick ${before + 3}`)
    }
    if (registry instanceof MonitorRegistry) registry.cancel(started.id)
    else registry.cancel(started.id, Date.now())
    await expectGone(started)
    expect(registry.getAll().find((t) => (t as { id: string }).id === started.id)?.status).toBe('cancelled')
    // Its state is gone: a later recover finds nothing.
    await waitFor(() => !existsSync(join(dir, `${started.id}.task.json`)), 10_000, 'the task record to be removed')
    const again = (kind === 'monitor' ? new MonitorRegistry() : new BackgroundShellRegistry()).recover({ stateDir: dir })
    expect([again.adopted, again.settled, again.lost]).toEqual([[], [], []])
  })

  it('ending while no host runs: reported once by the next host, with its real exit code', async () => {
    const dir = newStateDir()
    const host = await startHost('sigkill', kind, dir, '-', 'sleep 0.5; echo done; exit 7')
    host.kill('SIGKILL')
    await host.exited
    const { id } = host.started
    await waitFor(() => existsSync(join(dir, `${id}.end.json`)), 10_000, 'the keeper to record the end')
    const registry = kind === 'monitor' ? new MonitorRegistry() : new BackgroundShellRegistry()
    const notes: { status: string; text: string }[] = []
    registry.setNotificationCallback((display: string, model: string, meta: { status: string }) =>
      notes.push({ status: meta.status, text: model }),
    )
    const result = registry.recover({ stateDir: dir })
    expect(result.adopted).toEqual([])
    expect(result.settled).toHaveLength(1)
    const settled = result.settled[0] as { status: string; end?: { reason: string; exitCode?: number } }
    expect(settled.status).toBe('failed')
    expect(settled.end).toMatchObject({ reason: 'exited', exitCode: 7 })
    await waitFor(() => notes.length >= 1, 5000, 'the terminal notification')
    expect(notes).toHaveLength(1)
    expect(notes[0].status).toBe('failed')
    // Reported once: the second recover finds nothing.
    const again = (kind === 'monitor' ? new MonitorRegistry() : new BackgroundShellRegistry()).recover({ stateDir: dir })
    expect([again.adopted, again.settled, again.lost]).toEqual([[], [], []])
  })

  it('with no host at all, the lease ends the whole tree: a process ignoring SIGTERM and a double-forked one', async () => {
    const dir = newStateDir()
    const daemonFile = join(dir, 'daemon.pid')
    const script = join(dir, 'stubborn.sh')
    writeFileSync(
      script,
      [
        "trap '' TERM",
        `( setsid bash -c 'trap "" TERM; echo $$ > ${daemonFile}; exec sleep 300' & )`,
        `while [ ! -s ${daemonFile} ]; do sleep 0.05; done`,
        'echo ready',
        'exec sleep 300',
      ].join('\n'),
    )
    const leaseMs = 2000
    const host = await startHost('sigkill', kind, dir, '-', `bash ${script}`, leaseMs)
    await waitFor(() => existsSync(daemonFile) && readFileSync(daemonFile, 'utf8').trim() !== '', 10_000, 'the daemon')
    const daemon = Number(readFileSync(daemonFile, 'utf8').trim())
    host.kill('SIGKILL')
    await host.exited
    expect(isAlive(daemon)).toBe(true)
    // The issue's bound: gone within leaseMs + 10 s of the last renewal (the host's death).
    await waitFor(
      () => !isAlive(host.started.pid) && !isAlive(daemon) && tagged(host.started.tag).length === 0,
      leaseMs + 10_000,
      'the lease to end the tree',
    )
    await waitFor(() => existsSync(join(dir, `${host.started.id}.end.json`)), 10_000, 'the recorded end')
    const registry = kind === 'monitor' ? new MonitorRegistry() : new BackgroundShellRegistry()
    const result = registry.recover({ stateDir: dir })
    expect(result.settled).toHaveLength(1)
    expect((result.settled[0] as { end?: object }).end).toMatchObject({
      reason: 'host-exit',
      by: 'host',
      detail: `lease of ${leaseMs} ms expired`,
    })
  })

  it('two hosts racing to recover it: exactly one adopts', async () => {
    const dir = newStateDir()
    const host = await startHost('sigkill', kind, dir)
    host.kill('SIGKILL')
    await host.exited
    const racers = [runHost(['recover', kind, dir]), runHost(['recover', kind, dir])]
    const results = (await Promise.all(racers.map((r) => r.line))).map((l) => JSON.parse(l))
    const adopted = results.map((r) => r.adopted.length)
    expect(adopted.sort()).toEqual([0, 1])
    const loser = results.find((r) => r.adopted.length === 0)
    expect(loser.busy).toEqual([host.started.id])
    // The winner owns it while it lives; once both are gone, cleanup adopts and cancels it.
    for (const r of racers) r.kill('SIGKILL')
    await Promise.all(racers.map((r) => r.exited))
  })
})

/** FNV-1a 64 of a string's UTF-8 bytes, lowercase hex (the records' checksum). */
function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= BigInt(byte)
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn
  }
  return hash.toString(16).padStart(16, '0')
}

function writeRecord(path: string, record: object) {
  const body = JSON.stringify(record)
  writeFileSync(path, `${body.slice(0, -1)},"checksum":"${fnv1a64(body)}"}\n`, { mode: 0o600 })
}

describe('recover() never trusts what it cannot prove', () => {
  it('a stranger with the recorded pid is reported lost and never signalled', async () => {
    const dir = newStateDir()
    // A process of our own, untagged: its pid stands in for a reused one.
    const stranger = spawn('sleep', ['300'], { stdio: 'ignore' })
    strangers.push(stranger.pid!)
    const pid = stranger.pid!
    writeRecord(join(dir, 'mon_stranger.task.json'), {
      version: 1,
      kind: 'monitor',
      id: 'mon_stranger',
      command: 'sleep 300',
      description: 'sleep 300',
      cwd: '/',
      startTime: Date.now(),
      leaseMs: LEASE_MS,
      outputPath: join(dir, 'mon_stranger.log'),
      statusPath: null,
      maxOutputBytes: 1024,
      options: {},
      keeper: { pid, startTime: 1, tag: 'not-its-tag' },
      task: { pid, pgid: pid, startTime: 1, tag: 'not-its-tag', cgroup: null },
    })
    const registry = new MonitorRegistry()
    const result = registry.recover({ stateDir: dir })
    expect(result.adopted).toEqual([])
    expect(result.lost).toHaveLength(1)
    expect(result.lost[0]).toMatchObject({ id: 'mon_stranger', command: 'sleep 300' })
    expect(registry.getAll()).toEqual([])
    // Still alive, well after recover returned: nothing was sent to it.
    await new Promise((r) => setTimeout(r, 300))
    expect(isAlive(pid)).toBe(true)
    // Reported once.
    expect(new MonitorRegistry().recover({ stateDir: dir }).lost).toEqual([])
  })

  it('a corrupt or half-written state file is reported and skipped, once', () => {
    const dir = newStateDir()
    writeFileSync(join(dir, 'bad.task.json'), '{"version":1,"kind":"monitor","id":"bad"', { mode: 0o600 })
    writeRecord(join(dir, 'tampered.task.json'), { version: 1, kind: 'shell', id: 'tampered' })
    const text = readFileSync(join(dir, 'tampered.task.json'), 'utf8').replace('shell', 'sheLL')
    writeFileSync(join(dir, 'tampered.task.json'), text)
    const registry = new BackgroundShellRegistry()
    const result = registry.recover({ stateDir: dir })
    expect(result.corrupt.map((c) => c.file.split('/').pop()).sort()).toEqual(['bad.task.json', 'tampered.task.json'])
    for (const c of result.corrupt) expect(c.error).toBeTruthy()
    expect([result.adopted, result.settled, result.lost]).toEqual([[], [], []])
    expect(registry.getAll()).toEqual([])
    expect(new BackgroundShellRegistry().recover({ stateDir: dir }).corrupt).toEqual([])
  })
})

it("a monitor's lines missed while no host ran arrive as one digest notification, then live lines", async () => {
  const dir = newStateDir()
  const [go1, go2] = [join(dir, 'go1'), join(dir, 'go2')]
  const command = `while [ ! -e ${go1} ]; do sleep 0.05; done; for i in $(seq 1 50); do echo missed $i; done; while [ ! -e ${go2} ]; do sleep 0.05; done; echo live 1; sleep 300`
  const host = await startHost('sigkill', 'monitor', dir, '-', command)
  host.kill('SIGKILL')
  await host.exited
  writeFileSync(go1, '')
  await waitFor(() => readFileSync(host.started.output, 'utf8').includes('missed 50\n'), 10_000, 'the missed lines in the log')

  const registry = new MonitorRegistry()
  const notes: { text: string; dropped?: number }[] = []
  registry.setNotificationCallback((display: string, _model: string, meta: { droppedSince?: number }) =>
    notes.push({ text: display, dropped: meta.droppedSince }),
  )
  expect(registry.recover({ stateDir: dir }).adopted).toHaveLength(1)
  await waitFor(() => notes.length >= 1, 10_000, 'the digest notification')
  const live = registry.waitFor(host.started.id, { match: '^live 1$', timeoutMs: 10_000 })
  writeFileSync(go2, '')
  expect((await live).reason).toBe('match')
  await waitFor(() => notes.some((n) => n.text.includes('live 1')), 10_000, 'the live line')
  expect(notes).toHaveLength(2)
  expect(notes[0].dropped).toBe(50)
  expect(notes[0].text).toContain('50 lines were written while no host was attached')
  expect(notes[0].text).toContain('first: missed 1; last: missed 50')
  registry.cancel(host.started.id)
  await expectGone(host.started)
})

it('the digest of one missed line is singular', async () => {
  const dir = newStateDir()
  const go = join(dir, 'go')
  const host = await startHost('sigkill', 'monitor', dir, '-', `while [ ! -e ${go} ]; do sleep 0.05; done; echo missed; sleep 300`)
  host.kill('SIGKILL')
  await host.exited
  writeFileSync(go, '')
  await waitFor(() => readFileSync(host.started.output, 'utf8').includes('missed\n'), 10_000, 'the line in the log')
  const registry = new MonitorRegistry()
  const notes: string[] = []
  registry.setNotificationCallback((display: string) => notes.push(display))
  expect(registry.recover({ stateDir: dir }).adopted).toHaveLength(1)
  await waitFor(() => notes.length >= 1, 10_000, 'the digest notification')
  expect(notes[0]).toContain('1 line was written while no host was attached (counted, not replayed)')
  registry.cancel(host.started.id)
  await expectGone(host.started)
})

describe('bad persist options throw before anything starts', () => {
  const cases: [string, (dir: string) => unknown, RegExp, ErrorConstructor][] = [
    ['not an object', () => 'x', /options\.persist/, TypeError],
    ['a relative stateDir', () => ({ stateDir: 'state' }), /persist\.stateDir/, TypeError],
    ['a stateDir that is not a string', () => ({ stateDir: 42 }), /persist\.stateDir/, TypeError],
    ['a leaseMs below 1000', (dir) => ({ stateDir: dir, leaseMs: 999 }), /persist\.leaseMs/, RangeError],
    ['a leaseMs above 7 days', (dir) => ({ stateDir: dir, leaseMs: 604_800_001 }), /persist\.leaseMs/, RangeError],
    ['a fractional leaseMs', (dir) => ({ stateDir: dir, leaseMs: 1500.5 }), /persist\.leaseMs/, RangeError],
    ['a leaseMs that is not a number', (dir) => ({ stateDir: dir, leaseMs: '5000' }), /persist\.leaseMs/, TypeError],
  ]

  it.each(cases)('%s', (_what, persist, message, type) => {
    const dir = newStateDir()
    const marker = join(dir, 'ran')
    const monitors = new MonitorRegistry()
    const shells = new BackgroundShellRegistry()
    const bad = persist(join(dir, 'state'))
    expect(() => monitors.start({ command: `touch ${marker}`, persist: bad as never })).toThrowError(type)
    expect(() => monitors.start({ command: `touch ${marker}`, persist: bad as never })).toThrowError(message)
    expect(() =>
      executeBackground({ command: `touch ${marker}`, cwd: '/tmp', outputDir: dir, registry: shells, persist: bad as never }),
    ).toThrowError(message)
    expect(monitors.getAll()).toEqual([])
    expect(shells.getAll()).toEqual([])
    expect(existsSync(join(dir, 'state'))).toBe(false)
    expect(existsSync(marker)).toBe(false)
  })

  it('with terminal mode', () => {
    const dir = newStateDir()
    const monitors = new MonitorRegistry()
    expect(() => monitors.start({ command: 'true', terminal: true, persist: { stateDir: dir } })).toThrowError(
      /terminal tasks cannot be persisted/,
    )
    expect(monitors.getAll()).toEqual([])
  })

  it.each([
    ['a symlinked stateDir', (dir: string) => {
      mkdirSync(join(dir, 'real'), { mode: 0o700 })
      symlinkSync(join(dir, 'real'), join(dir, 'link'))
      return join(dir, 'link')
    }],
    ['a stateDir open to the group', (dir: string) => {
      mkdirSync(join(dir, 'open'))
      chmodSync(join(dir, 'open'), 0o750)
      return join(dir, 'open')
    }],
  ])('%s is refused, naming persist.stateDir', (_what, make) => {
    const dir = newStateDir()
    const stateDir = make(dir)
    const marker = join(dir, 'ran')
    const monitors = new MonitorRegistry()
    const shells = new BackgroundShellRegistry()
    expect(() => monitors.start({ command: `touch ${marker}`, persist: { stateDir } })).toThrowError(/persist\.stateDir/)
    expect(() =>
      executeBackground({ command: `touch ${marker}`, cwd: '/tmp', outputDir: dir, registry: shells, persist: { stateDir } }),
    ).toThrowError(/persist\.stateDir/)
    expect(() => monitors.recover({ stateDir })).toThrowError(/stateDir/)
    expect(monitors.getAll()).toEqual([])
    expect(shells.getAll()).toEqual([])
    expect(existsSync(marker)).toBe(false)
  })
})

describe('the keeper executable', () => {
  it('is the taskstream-keeper beside the addon, not a node process', async () => {
    const dir = newStateDir()
    const shells = new BackgroundShellRegistry()
    const handle = executeBackground({ command: 'sleep 30', cwd: '/tmp', outputDir: dir, registry: shells, persist: { stateDir: dir } })
    const { keeper } = recorded(dir, handle.shellId)
    const addon = /\s(\/\S*taskstream\.[\w-]+\.node)$/m.exec(readFileSync('/proc/self/maps', 'utf8'))![1]!
    expect(readlinkSync(`/proc/${keeper}/exe`)).toBe(join(dirname(realpathSync(addon)), 'taskstream-keeper'))
    shells.requestCancel(handle.shellId)
    await handle.done
    await waitFor(() => !isAlive(keeper), 10_000, 'the keeper to exit')
  })

  it('missing beside the addon: persist throws naming its path, and nothing starts', async () => {
    const dir = newStateDir()
    const addon = /\s(\/\S*taskstream\.[\w-]+\.node)$/m.exec(readFileSync('/proc/self/maps', 'utf8'))![1]!
    const lonely = join(dir, 'addon')
    mkdirSync(lonely)
    copyFileSync(addon, join(lonely, basename(addon)))
    const stateDir = join(dir, 'state')
    const marker = join(dir, 'ran')
    // A Node of its own loads the copy (one addon file per process), tries both kinds, and
    // prints what was thrown.
    const script = `
      const t = require(${JSON.stringify(join(__dirname, '..', 'index.js'))})
      const out = []
      const persist = { stateDir: ${JSON.stringify(stateDir)} }
      try { new t.MonitorRegistry().start({ command: 'touch ${marker}', persist }); out.push('started') } catch (e) { out.push(e.message) }
      try { t.executeBackground({ command: 'touch ${marker}', cwd: '/tmp', outputDir: ${JSON.stringify(dir)}, registry: new t.BackgroundShellRegistry(), persist }); out.push('started') } catch (e) { out.push(e.message) }
      console.log(JSON.stringify(out))`
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: join(lonely, basename(addon)) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    let stdout = ''
    child.stdout!.on('data', (d) => (stdout += d))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    clearTimeout(timer)
    expect(code).toBe(0)
    const messages = JSON.parse(stdout) as string[]
    expect(messages).toHaveLength(2)
    for (const message of messages) {
      expect(message).toContain(`the keeper executable ${join(lonely, 'taskstream-keeper')} is missing`)
      expect(message).toContain('options.persist')
    }
    expect(existsSync(stateDir)).toBe(false)
    expect(existsSync(marker)).toBe(false)
  })
})

/** The tag and keeper of a task this process just started with `persist`. */
function recorded(dir: string, id: string): { tag: string; keeper: number } {
  const task = JSON.parse(readFileSync(join(dir, `${id}.task.json`), 'utf8'))
  return { tag: task.task.tag, keeper: task.keeper.pid }
}

async function expectTreeGone(dir: string, id: string, pid: number, tag: string, keeper: number) {
  await waitFor(() => !isAlive(pid), 10_000, `task ${pid} to end`)
  await waitFor(() => tagged(tag).length === 0, 10_000, `no process tagged ${tag}`)
  await waitFor(() => !isAlive(keeper), 10_000, `keeper ${keeper} to end`)
  await waitFor(() => !existsSync(join(dir, `${id}.task.json`)), 10_000, 'its state to be removed')
}

const withChild = `bash ${join(__dirname, 'fixtures', 'eval.sh')} 'sleep 300 & sleep 300'`

describe('every way a host stops a persisted task goes through its keeper', () => {
  it.each([
    ['cancel()', (r: MonitorRegistry, id: string) => r.cancel(id), 'cancelled', { reason: 'cancelled', via: 'cancel' }, {}],
    ['abortAll()', (r: MonitorRegistry) => r.abortAll(), 'cancelled', { reason: 'cancelled', via: 'abortAll' }, {}],
    [
      'cancelRunningForOwner()',
      (r: MonitorRegistry) => r.cancelRunningForOwner('agent-1'),
      'cancelled',
      { reason: 'cancelled', via: 'owner' },
      { ownerAgentId: 'agent-1' },
    ],
    ['the entry\'s AbortController', (r: MonitorRegistry, id: string) => r.get(id)!.abortController.abort(), 'cancelled', { reason: 'cancelled' }, {}],
    ['the idle timeout', () => {}, 'completed', { reason: 'idle-timeout' }, { idleTimeoutMs: 1000 }],
  ] as const)('monitor: %s', async (_what, stop, status, end, extra) => {
    const dir = newStateDir()
    const registry = new MonitorRegistry()
    const notes: string[] = []
    registry.setNotificationCallback((_d: string, _m: string, meta: { status: string }) => notes.push(meta.status))
    const entry = registry.start({ command: withChild, persist: { stateDir: dir, leaseMs: LEASE_MS }, ...extra })
    expect(entry.status).toBe('running')
    const { tag, keeper } = recorded(dir, entry.monitorId)
    await waitFor(() => tagged(tag).length >= 2, 10_000, 'the task and its child')
    stop(registry, entry.monitorId)
    await waitFor(() => registry.get(entry.monitorId)!.status !== 'running', 10_000, 'the entry to settle')
    expect(registry.get(entry.monitorId)!.status).toBe(status)
    expect(registry.get(entry.monitorId)!.end).toMatchObject(end)
    await expectTreeGone(dir, entry.monitorId, entry.pid!, tag, keeper)
    // An owned monitor's notifications go to its agent's callback instead.
    if (!('ownerAgentId' in extra)) expect(notes.filter((s) => s !== 'running')).toEqual([status])
  })

  it('monitor: max events', async () => {
    const dir = newStateDir()
    const registry = new MonitorRegistry({ throttle: false })
    const entry = registry.start({
      command: `bash ${join(__dirname, 'fixtures', 'eval.sh')} 'sleep 300 & while :; do echo line; sleep 0.05; done'`,
      maxEvents: 3,
      persist: { stateDir: dir, leaseMs: LEASE_MS },
    })
    const { tag, keeper } = recorded(dir, entry.monitorId)
    await waitFor(() => registry.get(entry.monitorId)!.status !== 'running', 10_000, 'max events')
    expect(registry.get(entry.monitorId)!.end).toMatchObject({ reason: 'max-events' })
    expect(registry.get(entry.monitorId)!.eventCount).toBe(3)
    await expectTreeGone(dir, entry.monitorId, entry.pid!, tag, keeper)
  })

  it('monitor: an exit code reaches the entry as for an own task', async () => {
    const dir = newStateDir()
    const registry = new MonitorRegistry()
    const entry = registry.start({ command: 'echo one; exit 3', persist: { stateDir: dir, leaseMs: LEASE_MS } })
    await waitFor(() => registry.get(entry.monitorId)!.status !== 'running', 10_000, 'the exit')
    expect(registry.get(entry.monitorId)).toMatchObject({ status: 'failed', end: { reason: 'exited', exitCode: 3 } })
    expect(registry.get(entry.monitorId)!.eventCount).toBe(1)
    await waitFor(() => readdirSync(dir).filter((f) => f !== 'lease').length === 0, 10_000, 'its state to be removed')
  })

  it.each([
    ['its AbortSignal', (_r: BackgroundShellRegistry, _id: string, ac: AbortController) => ac.abort(), { reason: 'cancelled', via: 'signal' }],
    ['cancel()', (r: BackgroundShellRegistry, id: string) => r.cancel(id, Date.now()), { reason: 'cancelled', via: 'cancel' }],
    ['abortAll()', (r: BackgroundShellRegistry) => r.abortAll(), { reason: 'cancelled', via: 'abortAll' }],
  ] as const)('shell: %s', async (_what, stop, end) => {
    const dir = newStateDir()
    const registry = new BackgroundShellRegistry()
    const ac = new AbortController()
    const handle = executeBackground({
      command: 'sleep 300 & echo started; sleep 300',
      cwd: '/tmp',
      outputDir: join(dir, 'out'),
      registry,
      signal: ac.signal,
      persist: { stateDir: dir, leaseMs: LEASE_MS },
    })
    const { tag, keeper } = recorded(dir, handle.shellId)
    await waitFor(() => existsSync(handle.outputPath) && readFileSync(handle.outputPath, 'utf8').includes('started'), 10_000, 'output')
    stop(registry, handle.shellId, ac)
    const result = await handle.done
    expect(result.status).toBe('cancelled')
    expect(registry.get(handle.shellId)!.end).toMatchObject(end)
    await expectTreeGone(dir, handle.shellId, handle.pid!, tag, keeper)
  })

  it('shell: done reports the exit and the output file is the normal one', async () => {
    const dir = newStateDir()
    const registry = new BackgroundShellRegistry()
    const handle = executeBackground({
      command: 'printf "\\033[31mred\\033[0m\\n"; exit 3',
      cwd: '/tmp',
      outputDir: join(dir, 'out'),
      registry,
      persist: { stateDir: dir, leaseMs: LEASE_MS },
    })
    const result = await handle.done
    expect(result).toMatchObject({ status: 'failed', exitCode: 3, end: { reason: 'exited', exitCode: 3 } })
    expect(readFileSync(handle.outputPath, 'utf8')).toBe('red\n')
    const status = JSON.parse(readFileSync(handle.statusPath, 'utf8'))
    expect(status.end).toMatchObject({ reason: 'exited', exitCode: 3 })
  })
})

describe('a keeper that dies without recording an end', () => {
  it('takes its task along, and the following host settles the entry instead of waiting forever', async () => {
    const dir = newStateDir()
    const monitors = new MonitorRegistry()
    const shells = new BackgroundShellRegistry()
    const entry = monitors.start({ command: withChild, monitorId: 'mon', persist: { stateDir: dir, leaseMs: LEASE_MS } })
    const handle = executeBackground({ command: withChild, cwd: '/tmp', outputDir: join(dir, 'out'), registry: shells, shellId: 'sh', persist: { stateDir: dir, leaseMs: LEASE_MS } })
    const tasks = [recorded(dir, 'mon'), recorded(dir, 'sh')]
    for (const { keeper } of tasks) process.kill(keeper, 'SIGKILL')
    for (const { tag } of tasks) await waitFor(() => tagged(tag).length === 0, 10_000, `no process tagged ${tag}`)
    await waitFor(() => monitors.get('mon')!.status !== 'running', 10_000, 'the monitor to settle')
    expect(monitors.get('mon')).toMatchObject({ status: 'failed', end: { reason: 'io-error' } })
    expect(monitors.get('mon')!.end!.detail).toContain('its keeper ended without recording an end')
    const result = await handle.done
    expect(result.status).toBe('failed')
    expect(result.end).toMatchObject({ reason: 'io-error' })
    expect(isAlive(entry.pid!)).toBe(false)
    // Reported here, so not again by a later host.
    await waitFor(() => !existsSync(join(dir, 'mon.task.json')) && !existsSync(join(dir, 'sh.task.json')), 10_000, 'the state to go')
    expect(new MonitorRegistry().recover({ stateDir: dir }).lost).toEqual([])
  })
})

describe('persisted starts that fail and resets', () => {
  it('a keeper that cannot start the command gives a failed entry, as a spawn failure does, and leaves no state', async () => {
    const dir = newStateDir()
    const monitors = new MonitorRegistry()
    const entry = monitors.start({ command: 'true', cwd: '/nonexistent-taskstream-dir', persist: { stateDir: dir } })
    expect(monitors.get(entry.monitorId)).toMatchObject({ status: 'failed', end: { reason: 'spawn-failed' } })
    const shells = new BackgroundShellRegistry()
    const handle = executeBackground({ command: 'true', cwd: '/nonexistent-taskstream-dir', outputDir: join(dir, 'out'), registry: shells, persist: { stateDir: dir } })
    expect(await handle.done).toMatchObject({ status: 'failed', end: { reason: 'spawn-failed' } })
    expect(readdirSync(dir).filter((f) => f !== 'lease' && f !== 'out')).toEqual([])
  })

  it('reset() stops persisted monitors through their keepers', async () => {
    const dir = newStateDir()
    const registry = new MonitorRegistry()
    const entry = registry.start({ command: withChild, persist: { stateDir: dir, leaseMs: LEASE_MS } })
    const { tag, keeper } = recorded(dir, entry.monitorId)
    await waitFor(() => tagged(tag).length >= 2, 10_000, 'the task and its child')
    registry.reset()
    expect(registry.getAll()).toEqual([])
    await expectTreeGone(dir, entry.monitorId, entry.pid!, tag, keeper)
  })
})
