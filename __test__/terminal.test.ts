// Terminal mode (API.md §6.5) through the built addon, with real processes:
// a pseudo-terminal as stdio, the screen, write() and resize(), lines with
// `\r` redraws collapsed, settled judged on the screen, terminal shells.
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { BackgroundShellRegistry, executeBackground, MonitorRegistry, type MonitorNotificationMeta } from '../index.js'
import { isAlive, sleep, waitFor } from './support/process'

const registries: MonitorRegistry[] = []
function monitors() {
  const registry = new MonitorRegistry({ throttle: false })
  registries.push(registry)
  const notes: { display: string; model: string; meta: MonitorNotificationMeta }[] = []
  registry.setNotificationCallback((display, model, meta) => notes.push({ display, model, meta }))
  const events = (id: string) =>
    notes.filter((n) => n.meta.monitorId === id && n.meta.type === 'event').map((n) => n.display.replace(/^.*?: /, ''))
  const terminal = (id: string) =>
    waitFor(() => notes.some((n) => n.meta.monitorId === id && n.meta.type === 'terminal'), 10_000, 'terminal notification')
  return { registry, notes, events, terminal }
}
const shellRegistries: BackgroundShellRegistry[] = []
afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll({ notify: false })
  for (const r of shellRegistries.splice(0)) r.abortAll()
})

const screenHas = (registry: MonitorRegistry, id: string, text: string) =>
  waitFor(() => registry.screen(id)?.text.includes(text) ?? false, 10_000, `screen to show ${JSON.stringify(text)}`)

describe('a pseudo-terminal as stdin, stdout and stderr', () => {
  it('is a terminal only in terminal mode, with TERM=xterm-256color', async () => {
    const { registry, events, terminal } = monitors()
    const cmd = 'if test -t 0 && test -t 1 && test -t 2; then echo "tty $TERM"; else echo notty; fi'
    const tty = registry.start({ command: cmd, terminal: true })
    const plain = registry.start({ command: cmd })
    await terminal(tty.id)
    await terminal(plain.id)
    expect(events(tty.id)).toEqual(['tty xterm-256color'])
    expect(events(plain.id)).toEqual(['notty'])
    expect(registry.screen(plain.id)).toBeUndefined()
    expect(registry.screen(tty.id)?.text).toBe('tty xterm-256color')
  })

  it('stty size honours cols/rows and resize()', async () => {
    const { registry, events } = monitors()
    const byDefault = registry.start({ command: 'stty size; sleep 30', terminal: true })
    const sized = registry.start({
      // The trap is set before the first size is printed: the test resizes as soon as it sees
      // that line, and a SIGWINCH that came before the trap would be ignored.
      command: "trap 'stty size' WINCH; stty size; while :; do sleep 0.05; done",
      terminal: { cols: 80, rows: 24 },
    })
    await waitFor(() => events(byDefault.id).length === 1 && events(sized.id).length === 1, 10_000, 'sizes')
    expect(events(byDefault.id)).toEqual(['40 120'])
    expect(events(sized.id)).toEqual(['24 80'])
    expect(registry.screen(sized.id)).toMatchObject({ cols: 80, rows: 24 })
    registry.resize(sized.id, 100, 30)
    await waitFor(() => events(sized.id).length === 2, 10_000, 'SIGWINCH')
    expect(events(sized.id)[1]).toBe('30 100')
    expect(registry.screen(sized.id)).toMatchObject({ cols: 100, rows: 30 })
  })
})

describe('the screen', () => {
  it('holds the text and the cursor after output and cursor moves, and the title', async () => {
    const { registry } = monitors()
    const m = registry.start({
      command: "printf '\\033]0;my title\\007hello\\r\\nworld\\033[1;3HX'; sleep 30",
      terminal: { cols: 40, rows: 10 },
    })
    await screenHas(registry, m.id, 'heXlo')
    const s = registry.screen(m.id)!
    expect(s).toMatchObject({ text: 'heXlo\nworld', cursor: { row: 0, col: 3 }, cols: 40, rows: 10, title: 'my title' })
    expect(s.changedAt).toBeGreaterThan(Date.now() - 60_000)
    expect(s.changedAt).toBeLessThanOrEqual(Date.now())
  })

  it('a \\r progress bar gives its last frame as the line and on the screen', async () => {
    const { registry, events, terminal } = monitors()
    const m = registry.start({
      command: "for i in 10 50 100; do printf '\\rprogress %s%%' $i; sleep 0.05; done; printf '\\n'; echo done",
      terminal: true,
    })
    await terminal(m.id)
    expect(events(m.id)).toEqual(['progress 100%', 'done'])
    expect(registry.screen(m.id)?.text).toBe('progress 100%\ndone')
  })

  it('keeps answering after the task ended', async () => {
    const { registry, terminal } = monitors()
    const m = registry.start({ command: 'echo last words', terminal: true })
    await terminal(m.id)
    expect(registry.screen(m.id)?.text).toBe('last words')
  })
})

describe('write()', () => {
  it('answers a read -p prompt', async () => {
    const { registry, events, terminal } = monitors()
    const m = registry.start({ command: "read -p 'name? ' name; echo \"hi $name\"", terminal: true })
    await screenHas(registry, m.id, 'name?')
    registry.write(m.id, 'agent\r')
    await terminal(m.id)
    expect(events(m.id)).toEqual(['name? agent', 'hi agent'])
    expect(registry.screen(m.id)?.text).toBe('name? agent\nhi agent')
    expect(m.status).toBe('completed')
  })

  it('takes bytes, and refuses clearly: no terminal, ended, unknown, bad data', async () => {
    const { registry, terminal } = monitors()
    const cat = registry.start({ command: 'cat', terminal: true })
    registry.write(cat.id, Buffer.from('bytes\n'))
    await screenHas(registry, cat.id, 'bytes\nbytes')
    const plain = registry.start({ command: 'sleep 30' })
    expect(() => registry.write(plain.id, 'x')).toThrow(/has no terminal/)
    expect(() => registry.resize(plain.id, 80, 24)).toThrow(/has no terminal/)
    expect(() => registry.write('nope', 'x')).toThrow(/"nope" is not registered/)
    expect(() => registry.write(cat.id, 5 as never)).toThrow(TypeError)
    expect(() => registry.resize(cat.id, 0, 24)).toThrow(RangeError)
    expect(() => registry.resize(cat.id, 80, 1001)).toThrow(RangeError)
    expect(() => registry.start({ command: 'true', terminal: { cols: 0 } })).toThrow(/"options\.terminal\.cols"/)
    expect(() => registry.start({ command: 'true', terminal: 'yes' as never })).toThrow(TypeError)
    registry.cancel(cat.id)
    await terminal(cat.id)
    expect(() => registry.write(cat.id, 'x')).toThrow(/has ended/)
  })
})

describe('settled on the screen', () => {
  it('an identical redraw does not keep it unsettled; the screen is the result', async () => {
    const { registry, notes } = monitors()
    const m = registry.start({
      command: "echo ready; while :; do printf '\\rworking'; sleep 0.02; done",
      terminal: true,
      settleMs: 300,
      description: 'spinner',
    })
    await waitFor(() => notes.some((n) => n.meta.type === 'settled'), 10_000, 'settled')
    const settled = notes.find((n) => n.meta.type === 'settled')!
    expect(settled.model).toContain('<summary>Monitor "spinner" output settled: no output for 300 ms.</summary>')
    expect(settled.model).toContain('<result>ready\nworking</result>')
    expect(settled.meta.status).toBe('running')
    expect(m.bytesRead).toBeGreaterThan(0)
  })

  it('a moving progress bar keeps it unsettled until it stops', async () => {
    const { registry, notes } = monitors()
    const m = registry.start({
      command: "for i in $(seq 1 40); do printf '\\r%d' $i; sleep 0.02; done; sleep 30",
      terminal: true,
      settleMs: 400,
    })
    await waitFor(() => notes.some((n) => n.meta.type === 'settled'), 10_000, 'settled')
    // The one settled notification came after the bar stopped: it shows the final frame.
    expect(notes.filter((n) => n.meta.type === 'settled')).toHaveLength(1)
    expect(notes.find((n) => n.meta.type === 'settled')!.model).toContain('<result>40</result>')
    registry.cancel(m.id, { notify: false })
  })
})

describe('terminal background shells', () => {
  it('write an output file of collapsed lines, answer screen() and write(), and die with cancel', async () => {
    const registry = new BackgroundShellRegistry()
    shellRegistries.push(registry)
    const outputDir = mkdtempSync(join(tmpdir(), 'taskstream-terminal-'))
    const h = executeBackground({
      command: "printf 'a\\nprogress 1\\rprogress 2\\n'; sleep 300 & echo child=$!; read line; echo \"got $line\"; wait",
      cwd: '/tmp',
      outputDir,
      registry,
      terminal: { cols: 60, rows: 10 },
    })
    await waitFor(() => readFileSync(h.outputPath, 'utf8').includes('child='), 10_000, 'child pid')
    const child = Number(/child=(\d+)/.exec(readFileSync(h.outputPath, 'utf8'))![1])
    expect(isAlive(child)).toBe(true)
    registry.write(h.shellId, 'hello\r')
    await waitFor(() => readFileSync(h.outputPath, 'utf8').includes('got hello'), 10_000, 'the answer')
    expect(readFileSync(h.outputPath, 'utf8')).toBe(`a\nprogress 2\nchild=${child}\nhello\ngot hello\n`)
    expect(registry.screen(h.shellId)).toMatchObject({ cols: 60, rows: 10, text: expect.stringContaining('got hello') })
    registry.cancel(h.shellId, Date.now())
    const result = await h.done
    expect(result.status).toBe('cancelled')
    await waitFor(() => !isAlive(child), 5000, 'the terminal session to die')
    expect(registry.screen(h.shellId)?.text).toContain('got hello')
    expect(() => registry.write(h.shellId, 'x')).toThrow(/has ended/)
    const plain = executeBackground({ command: 'sleep 30', cwd: '/tmp', outputDir, registry })
    expect(registry.screen(plain.shellId)).toBeUndefined()
    expect(() => registry.write(plain.shellId, 'x')).toThrow(/has no terminal/)
    await sleep(10)
  })
})
