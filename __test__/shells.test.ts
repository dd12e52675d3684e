// Background shells: executeBackground and BackgroundShellRegistry with real
// processes and real files (CONTRACT.md §2.13–2.15, §3.12).
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import {
  BackgroundShellRegistry,
  executeBackground,
  getDefaultBackgroundShellRegistry,
  MonitorRegistry,
  stripAnsi,
  type ShellTask,
  type ShellTaskRegistration,
} from '../index.js'
import { isAlive, sleep, waitFor } from './support/process'

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-shells-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let dirCount = 0
const freshDir = () => join(scratch, `out-${++dirCount}`)

interface Note {
  display: string
  model: string
  meta: { shellId: string; status: string; exitCode?: number; todoWorkChainId?: string }
}

const registries: BackgroundShellRegistry[] = []
function setup() {
  const registry = new BackgroundShellRegistry()
  registries.push(registry)
  const notes: Note[] = []
  const log: string[] = []
  registry.setNotificationCallback((display, model, meta) => {
    notes.push({ display, model, meta })
    log.push(`notify:${meta.status}`)
  })
  registry.setStatusChangeCallback((e) => log.push(`status:${e ? e.status : 'none'}`))
  return { registry, notes, log }
}
afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll()
})

function registration(over: Partial<ShellTaskRegistration> = {}): ShellTaskRegistration {
  const dir = freshDir()
  mkdirSync(dir, { recursive: true })
  return {
    shellId: 'a',
    command: 'npm test',
    cwd: '/repo',
    status: 'running',
    startTime: 1000,
    outputPath: join(dir, 'shell-a.output'),
    abortController: new AbortController(),
    ...over,
  }
}

describe('executeBackground', () => {
  it('writes ANSI-stripped output as it arrives, with a sidecar, and settles completed', async () => {
    const { registry, notes } = setup()
    const dir = freshDir()
    const h = executeBackground({
      command: "printf '\\033[3'; sleep 0.1; printf '1mred\\033[0m line\\n'; sleep 0.1; echo err >&2; sleep 0.3; echo last",
      cwd: '/tmp',
      outputDir: dir,
      registry,
    })
    expect(h.shellId).toMatch(/^bg_[0-9a-f]{8}$/)
    expect(h.outputPath).toBe(join(dir, `shell-${h.shellId}.output`))
    expect(h.statusPath).toBe(join(dir, `shell-${h.shellId}.status`))
    expect(h.pid).toEqual(expect.any(Number))
    expect(h.strippedTrailingAmp).toBe(false)
    // The sidecar exists at once, running, with the pid; 0600.
    const running = JSON.parse(readFileSync(h.statusPath, 'utf8'))
    expect(running).toMatchObject({ id: h.shellId, status: 'running', pid: h.pid, cwd: '/tmp', ownerPid: process.pid })
    expect(statSync(h.statusPath).mode & 0o777).toBe(0o600)
    // Lines are visible while the command still runs.
    await waitFor(() => readFileSync(h.outputPath, 'utf8').includes('err\n'), 3000, 'output while running')
    expect(registry.get(h.shellId)!.status).toBe('running')
    const result = await h.done
    expect(result).toMatchObject({ shellId: h.shellId, status: 'completed', exitCode: 0, signal: null, aborted: false })
    expect(readFileSync(h.outputPath, 'utf8')).toBe('red line\nerr\nlast\n')
    expect(statSync(h.outputPath).mode & 0o777).toBe(0o600)
    expect(result.bytesWritten).toBe('red line\nerr\nlast\n'.length)
    const settled = JSON.parse(readFileSync(h.statusPath, 'utf8'))
    expect(Object.keys(settled)).toEqual(['id', 'status', 'command', 'cwd', 'startTime', 'updatedAt', 'pid', 'endTime', 'exitCode', 'ownerPid', 'end'])
    expect(settled.end).toEqual({ reason: 'exited', by: 'process', exitCode: 0 })
    expect(settled).toMatchObject({ status: 'completed', exitCode: 0 })
    expect(settled.endTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(readdirSync(dir).sort()).toEqual([`shell-${h.shellId}.output`, `shell-${h.shellId}.status`])
    expect(notes).toHaveLength(1)
    expect(notes[0].display).toMatch(/^Background shell "printf .*\.\.\." completed\.$/)
    expect(notes[0].model).toContain('<output-tail truncated="false">red line\nerr\nlast</output-tail>')
  })

  it('an unterminated OSC at the end of the output does not swallow what follows it', async () => {
    // CONTRACT.md §3.17: the held sequence is released as unterminated at the
    // end, so the file holds stripAnsi of the whole output.
    const { registry } = setup()
    const h = executeBackground({ command: "printf '\\033]0;'; seq 1 100", cwd: '/tmp', outputDir: freshDir(), registry })
    const result = await h.done
    const whole = `\x1b]0;${Array.from({ length: 100 }, (_, i) => i + 1).join('\n')}\n`
    expect(result.status).toBe('completed')
    expect(readFileSync(h.outputPath, 'utf8')).toBe(stripAnsi(whole))
    expect(readFileSync(h.outputPath, 'utf8')).toMatch(/^\n2\n3\n[\s\S]*\n100\n$/)
  })

  it('maps exit codes, signals and spawn failures to the shell wording', async () => {
    const { registry } = setup()
    const run = (command: string, cwd = '/tmp') =>
      executeBackground({ command, cwd, outputDir: freshDir(), registry }).done
    await expect(run('exit 3')).resolves.toMatchObject({ status: 'failed', exitCode: 3, error: 'exited with code 3' })
    await expect(run('kill -TERM $$')).resolves.toMatchObject({ status: 'failed', signal: 15, error: 'terminated by signal 15' })
    const missing = await run('true', '/definitely/not/here')
    expect(missing.status).toBe('failed')
    expect(missing.error).toMatch(/No such file or directory|ENOENT/)
  })

  it('strips one trailing bare & and keeps && and \\&', async () => {
    const { registry } = setup()
    const a = executeBackground({ command: '  echo hi &  ', cwd: '/tmp', outputDir: freshDir(), registry })
    expect(a).toMatchObject({ command: 'echo hi', strippedTrailingAmp: true })
    const b = executeBackground({ command: 'echo a \\&', cwd: '/tmp', outputDir: freshDir(), registry })
    expect(b).toMatchObject({ command: 'echo a \\&', strippedTrailingAmp: false })
    await Promise.all([a.done, b.done])
    expect(readFileSync(b.outputPath, 'utf8')).toBe('a &\n')
  })

  it('done resolves only after a 5 MB write is fully on disk', async () => {
    const { registry } = setup()
    const h = executeBackground({ command: 'head -c 5242880 /dev/zero | tr "\\0" x', cwd: '/tmp', outputDir: freshDir(), registry })
    const result = await h.done
    expect(statSync(h.outputPath).size).toBe(5 * 1024 * 1024)
    expect(result).toMatchObject({ bytesRead: 5242880, bytesWritten: 5242880, bytesNotWritten: 0 })
  })

  it('caps the output file, counts the rest, and keeps draining', async () => {
    const { registry } = setup()
    const h = executeBackground({
      command: 'for i in $(seq 1 2000); do echo "line $i"; done',
      cwd: '/tmp',
      outputDir: freshDir(),
      registry,
      maxOutputBytes: 100,
    })
    const result = await h.done
    const text = readFileSync(h.outputPath, 'utf8')
    expect(result.status).toBe('completed')
    expect(result.bytesWritten).toBe(100)
    expect(result.bytesRead).toBeGreaterThan(10_000)
    expect(result.bytesNotWritten).toBe(result.bytesRead - 100)
    expect(text.match(/output limit of 100 bytes reached/g)).toHaveLength(1)
    expect(text.startsWith('line 1\nline 2\n')).toBe(true)
  })

  it('suppresses binary output per stream with one marker line', async () => {
    const { registry } = setup()
    const h = executeBackground({
      command: "echo text before; printf 'bin\\000ary\\n' >&2; echo more text; printf '\\000\\001' >&2",
      cwd: '/tmp',
      outputDir: freshDir(),
      registry,
    })
    const result = await h.done
    const text = readFileSync(h.outputPath, 'utf8')
    expect(result.binaryDetected).toBe(true)
    expect(text).toContain('text before\n')
    expect(text).toContain('more text\n')
    expect(text.match(/binary output detected on stderr/g)).toHaveLength(1)
    expect(text).not.toContain('\0')
  })

  it('validates before anything starts', () => {
    const { registry } = setup()
    const dir = freshDir()
    const bad: [unknown, RegExp, typeof TypeError | typeof RangeError | typeof Error][] = [
      [undefined, /"options"/, TypeError],
      [{ command: '   ', cwd: '/tmp', outputDir: dir }, /"options.command"/, TypeError],
      [{ command: 'true', cwd: 'tmp', outputDir: dir }, /"options.cwd"/, TypeError],
      [{ command: 'true', cwd: '/tmp', outputDir: 5 }, /"options.outputDir"/, TypeError],
      [{ command: 'true', cwd: '/tmp', outputDir: dir, env: { A: 1 } }, /"options.env.A"/, TypeError],
      [{ command: 'true', cwd: '/tmp', outputDir: dir, maxOutputBytes: 0 }, /"options.maxOutputBytes"/, RangeError],
      [{ command: 'true', cwd: '/tmp', outputDir: dir, shellId: '' }, /"options.shellId"/, RangeError],
      [{ command: 'true', cwd: '/tmp', outputDir: dir, registry: {} }, /"options.registry"/, TypeError],
      [{ command: 'true', cwd: '/tmp', outputDir: dir, signal: 'x' }, /"options.signal"/, TypeError],
    ]
    for (const [options, message, type] of bad) {
      const call = () =>
        executeBackground((options === undefined ? undefined : { registry, ...(options as object) }) as Parameters<typeof executeBackground>[0])
      expect(call, JSON.stringify(options)).toThrowError(type)
      expect(call).toThrowError(message)
    }
    // An outputDir that cannot be created is refused before anything is spawned.
    const file = join(scratch, 'a-file')
    writeFileSync(file, 'x')
    expect(() => executeBackground({ command: 'touch /tmp/ts-should-not-exist', cwd: '/tmp', outputDir: join(file, 'sub'), registry })).toThrowError(
      /outputDir/,
    )
    expect(existsSync('/tmp/ts-should-not-exist')).toBe(false)
    expect(registry.getAll()).toEqual([])
  })

  it('a duplicate shellId throws before creating any file or process', async () => {
    const { registry } = setup()
    const dir = freshDir()
    const first = executeBackground({ command: 'sleep 5', cwd: '/tmp', outputDir: dir, registry, shellId: 'dup' })
    const otherDir = freshDir()
    expect(() => executeBackground({ command: 'true', cwd: '/tmp', outputDir: otherDir, registry, shellId: 'dup' })).toThrowError(
      'Background shell "dup" is already registered.',
    )
    expect(existsSync(otherDir)).toBe(false)
    registry.requestCancel('dup')
    await first.done
  })

  it('an already-aborted signal throws its reason and starts nothing', () => {
    const { registry } = setup()
    const ac = new AbortController()
    const reason = new Error('turn over')
    ac.abort(reason)
    const dir = freshDir()
    expect(() => executeBackground({ command: 'true', cwd: '/tmp', outputDir: dir, registry, signal: ac.signal })).toThrow(reason)
    expect(existsSync(dir)).toBe(false)
    expect(registry.getAll()).toEqual([])
  })

  it('aborting the signal during the run cancels the shell and kills its tree', async () => {
    const { registry, notes } = setup()
    const ac = new AbortController()
    const h = executeBackground({ command: 'sleep 30 & echo $!; wait', cwd: '/tmp', outputDir: freshDir(), registry, signal: ac.signal })
    await waitFor(() => readFileSync(h.outputPath, 'utf8').trim() !== '', 3000, 'grandchild pid')
    const grandchild = Number(readFileSync(h.outputPath, 'utf8').trim())
    ac.abort()
    const result = await h.done
    expect(result).toMatchObject({ status: 'cancelled', aborted: true })
    expect(notes.at(-1)!.display).toBe('Background shell "sleep 30 & echo $!; wait" was cancelled.')
    for (const pid of [h.pid!, grandchild]) await waitFor(() => !isAlive(pid), 3000, `pid ${pid}`)
  })

  it('requestCancel only aborts; the settle path records cancelled', async () => {
    const { registry, log } = setup()
    const h = executeBackground({ command: 'sleep 30', cwd: '/tmp', outputDir: freshDir(), registry })
    log.length = 0
    registry.requestCancel(h.shellId)
    expect(registry.get(h.shellId)!.status).toBe('running')
    expect(log).toEqual([])
    const result = await h.done
    expect(result.status).toBe('cancelled')
    expect(log).toEqual(['notify:cancelled', 'status:cancelled'])
  })

  it('a descendant that keeps a pipe open keeps the shell running', async () => {
    const { registry } = setup()
    // The descendant writes its line only once the test creates `go`: the shell cannot end
    // before the check below, however slow the machine is.
    const dir = freshDir()
    mkdirSync(dir, { recursive: true })
    const go = join(dir, 'go')
    const h = executeBackground({
      command: `(while [ ! -e '${go}' ]; do sleep 0.01; done; echo late) & echo early`,
      cwd: '/tmp',
      outputDir: dir,
      registry,
    })
    await waitFor(() => existsSync(h.outputPath) && readFileSync(h.outputPath, 'utf8') === 'early\n', 10_000, 'early')
    await sleep(300)
    expect(registry.get(h.shellId)!.status).toBe('running')
    writeFileSync(go, '')
    await h.done
    expect(readFileSync(h.outputPath, 'utf8')).toBe('early\nlate\n')
  })

  it('an output file removed mid-run does not crash anything', async () => {
    const { registry, notes } = setup()
    const h = executeBackground({ command: 'echo one; sleep 0.3; echo two', cwd: '/tmp', outputDir: freshDir(), registry })
    await waitFor(() => existsSync(h.outputPath) && readFileSync(h.outputPath, 'utf8') === 'one\n', 3000)
    rmSync(h.outputPath)
    const result = await h.done
    expect(result.status).toBe('completed')
    expect(notes[0].model).toContain('<output-tail error="unreadable" />')
  })

  it('uses a process-wide registry when none is passed', async () => {
    const h = executeBackground({ command: 'echo default', cwd: '/tmp', outputDir: freshDir() })
    const registry = getDefaultBackgroundShellRegistry()
    expect(registry).toBe(getDefaultBackgroundShellRegistry())
    expect(registry.get(h.shellId)!.command).toBe('echo default')
    await h.done
  })
})

describe('BackgroundShellRegistry (CONTRACT.md §2.13, §3.12)', () => {
  it('one pid rule for both registries: an integer 0..4294967295, else a RangeError naming registration.pid', () => {
    const { registry } = setup()
    const monitors = new MonitorRegistry()
    const monitor = (pid: unknown, id: string) => ({ monitorId: id, command: 'true', pid })
    for (const [pid, type] of [[-1, RangeError], [1.5, RangeError], [2 ** 32, RangeError], [Number.NaN, RangeError], ['12', TypeError]] as const) {
      const id = `bad-${String(pid)}`
      expect(() => registry.register(registration({ shellId: id, pid: pid as number }))).toThrowError(type)
      expect(() => registry.register(registration({ shellId: id, pid: pid as number }))).toThrowError(/"registration\.pid"/)
      expect(() => monitors.register(monitor(pid, id) as never)).toThrowError(type)
      expect(() => monitors.register(monitor(pid, id) as never)).toThrowError(/"registration\.pid"/)
      expect(registry.get(id)).toBeUndefined()
      expect(monitors.get(id)).toBeUndefined()
    }
    for (const pid of [0, 4294967295]) {
      expect(registry.register(registration({ shellId: `ok-${pid}`, pid })).pid).toBe(pid)
      expect(monitors.register(monitor(pid, `ok-${pid}`) as never).pid).toBe(pid)
    }
    monitors.abortAll({ notify: false })
  })

  it('a pid the caller writes on its entry later follows the same rule: 0..4294967295 shows, anything else reads as none', () => {
    const { registry, notes } = setup()
    for (const [pid, shown] of [[0, '<pid>0</pid>'], [4294967295, '<pid>4294967295</pid>'], [-1, null], [1.5, null], [2 ** 32, null], ['12', null]] as const) {
      const reg = registration({ shellId: `later-${String(pid)}`, pid: 1234 })
      registry.register(reg)
      ;(reg as { pid: unknown }).pid = pid
      registry.complete(reg.shellId, 0, 2000)
      const { model } = notes[notes.length - 1]
      if (shown === null) expect(model, String(pid)).not.toContain('<pid>')
      else expect(model, String(pid)).toContain(shown)
    }
  })

  it('register returns the same object, filled in, and writes the sidecar', () => {
    const { registry, log } = setup()
    const reg = registration({ pid: 1234 })
    const entry = registry.register(reg)
    expect(entry).toBe(reg)
    expect(registry.get('a')).toBe(reg)
    expect(entry).toMatchObject({ id: 'a', kind: 'shell', description: 'npm test', outputFile: reg.outputPath, outputOffset: 0, notified: false })
    expect(JSON.parse(readFileSync(reg.outputPath.replace(/\.output$/, '.status'), 'utf8'))).toMatchObject({ id: 'a', status: 'running', pid: 1234 })
    expect(log).toEqual(['status:running'])
    expect(registry.hasRunningEntries()).toBe(true)
    expect(() => registry.register(registration())).toThrowError('Background shell "a" is already registered.')
  })

  it('golden completed notification with the output tail', () => {
    const { registry, notes, log } = setup()
    const reg = registration({ pid: 1234 })
    writeFileSync(reg.outputPath, 'first line\nfinal result\n')
    registry.register(reg)
    log.length = 0
    registry.complete('a', 0, 2000)
    expect(log).toEqual(['notify:completed', 'status:completed'])
    const n = notes[0]
    expect(n.display).toBe('Background shell "npm test" completed.')
    for (const part of [
      '<task-notification>',
      '<task-id>a</task-id>',
      '<kind>shell</kind>',
      '<status>completed</status>',
      '<command>npm test</command>',
      '<cwd>/repo</cwd>',
      '<pid>1234</pid>',
      '<exit-code>0</exit-code>',
      '<output-tail truncated="false">first line\nfinal result</output-tail>',
      `<output-file>${reg.outputPath}</output-file>`,
    ]) {
      expect(n.model).toContain(part)
    }
    expect(n.meta).toMatchObject({ shellId: 'a', status: 'completed', exitCode: 0 })
    expect(reg).toMatchObject({ status: 'completed', exitCode: 0, endTime: 2000, notified: true })
  })

  it('escapes and strips every field', () => {
    const { registry, notes } = setup()
    registry.register(registration({ shellId: 'a&b', command: 'echo "<script>"', cwd: '/repo&work' }))
    registry.fail('a&b', 'bad <thing>\x1B[31m \u202Eevil\u2069', 2000)
    const n = notes[0]
    expect(n.display).toBe('Background shell "echo "<script>"" failed.')
    expect(n.model).toContain('<task-id>a&amp;b</task-id>')
    expect(n.model).toContain('<command>echo &quot;&lt;script&gt;&quot;</command>')
    expect(n.model).toContain('<cwd>/repo&amp;work</cwd>')
    expect(n.model).toContain('<result>bad &lt;thing&gt;[31m evil</result>')
  })

  it('truncates long commands in the label and the model', () => {
    const { registry, notes } = setup()
    const command = `node -e ${'a'.repeat(700)}`
    registry.register(registration({ command }))
    registry.complete('a', 0, 2000)
    const n = notes[0]
    expect(n.display).toBe(`Background shell "${command.slice(0, 77)}..." completed.`)
    expect(n.model).toContain(`<summary>Shell command "${command.slice(0, 77)}..." completed.</summary>`)
    expect(n.model).toContain(`<command truncated="true">${command.slice(0, 497)}...</command>`)
    expect(n.model).not.toContain(command)
  })

  it('a symlinked output path never leaks its target', () => {
    const { registry, notes } = setup()
    const dir = freshDir()
    mkdirSync(dir, { recursive: true })
    const secret = join(dir, 'secret')
    writeFileSync(secret, 'TOP SECRET\n')
    const link = join(dir, 'shell-a.output')
    symlinkSync(secret, link)
    expect(lstatSync(link).isSymbolicLink()).toBe(true)
    registry.register(registration({ outputPath: link }))
    registry.complete('a', 0, 2000)
    expect(notes[0].model).not.toContain('TOP SECRET')
    expect(notes[0].model).toContain('<output-tail error="unreadable"')
  })

  it('requestCancel then cancel: no callback until cancel, then cancelled', () => {
    const { registry, notes, log } = setup()
    const ac = new AbortController()
    registry.register(registration({ command: 'sleep 60', abortController: ac }))
    log.length = 0
    registry.requestCancel('a')
    expect(ac.signal.aborted).toBe(true)
    expect(log).toEqual([])
    let statusInListener = ''
    const ac2 = new AbortController()
    ac2.signal.addEventListener('abort', () => (statusInListener = registry.get('b')!.status))
    registry.register(registration({ shellId: 'b', abortController: ac2 }))
    registry.cancel('a', 2000)
    expect(notes[0].display).toBe('Background shell "sleep 60" was cancelled.')
    expect(notes[0].model).toContain('<status>cancelled</status>')
    expect(notes[0].meta).toMatchObject({ shellId: 'a', status: 'cancelled' })
    expect(notes[0].meta.exitCode).toBeUndefined()
    registry.cancel('b', 2001)
    expect(statusInListener).toBe('cancelled')
  })

  it('replays un-notified terminal entries in settle order, but not shutdown ones', () => {
    const registry = new BackgroundShellRegistry()
    registries.push(registry)
    registry.register(registration({ shellId: 'x', startTime: 1 }))
    registry.register(registration({ shellId: 'y', startTime: 2 }))
    registry.register(registration({ shellId: 'z', startTime: 3 }))
    registry.complete('y', 0, 10)
    registry.fail('x', 'boom', 20)
    registry.abortAll()
    expect(registry.get('z')).toMatchObject({ status: 'cancelled', notified: true })
    const seen: string[] = []
    registry.setNotificationCallback((_d, _m, meta) => seen.push(meta.shellId))
    expect(seen).toEqual(['y', 'x'])
    registry.setNotificationCallback((_d, _m, meta) => seen.push(`again:${meta.shellId}`))
    expect(seen).toEqual(['y', 'x'])
  })

  it('abortAll fires one status-change with the last cancelled entry; reset fires it with the first', () => {
    const { registry, notes, log } = setup()
    registry.register(registration({ shellId: 'p' }))
    registry.register(registration({ shellId: 'q' }))
    log.length = 0
    const seen: (ShellTask | undefined)[] = []
    registry.setStatusChangeCallback((e) => seen.push(e))
    registry.abortAll()
    expect(seen.map((e) => e?.id)).toEqual(['q'])
    expect(notes).toEqual([])
    seen.length = 0
    registry.reset()
    expect(seen.map((e) => e?.id)).toEqual(['p'])
    expect(registry.getAll()).toEqual([])
    seen.length = 0
    registry.reset()
    expect(seen).toEqual([])
  })

  it('prunes to 32 terminal entries, keeping running ones', () => {
    const { registry } = setup()
    registry.register(registration({ shellId: 'runner', startTime: 0 }))
    for (let i = 0; i < 34; i++) {
      registry.register(registration({ shellId: `s${i}`, startTime: i }))
      registry.complete(`s${i}`, 0, 100 + i)
    }
    const ids = registry.getAll().map((e) => e.id)
    expect(ids).toHaveLength(33)
    expect(ids).toContain('runner')
    expect(ids).not.toContain('s0')
    expect(ids).not.toContain('s1')
  })

  it('argument errors are TypeErrors naming the argument', () => {
    const registry = new BackgroundShellRegistry()
    registries.push(registry)
    expect(() => registry.register(null as unknown as ShellTaskRegistration)).toThrowError(TypeError)
    expect(() => registry.complete('a', 'x' as unknown as number, 1)).toThrowError(/"exitCode"/)
    expect(() => registry.fail('a', 'e', 'later' as unknown as number)).toThrowError(/"endTime"/)
    expect(() => registry.setNotificationCallback(3 as unknown as () => void)).toThrowError(TypeError)
  })
})
