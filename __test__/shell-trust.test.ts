// Background shells stay truthful whatever the output directory holds and
// whatever the caller does to the registry: an output file that
// cannot be opened fails the shell before anything runs, `done` reports the
// status the registry settled the shell with, and a full disk still leaves a
// sidecar that says how the shell ended. Real processes, real files, and a
// real (tiny) tmpfs.
import { execFileSync } from 'node:child_process'
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import { BackgroundShellRegistry, executeBackground, type BackgroundShellResult } from '../index.js'
import { isAlive, waitFor } from './support/process'

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-shell-trust-'))
const mounts: string[] = []
afterAll(() => {
  for (const dir of mounts.splice(0)) execFileSync('umount', [dir])
  rmSync(scratch, { recursive: true, force: true })
})
let dirCount = 0
const freshDir = () => {
  const dir = join(scratch, `out-${++dirCount}`)
  mkdirSync(dir, { recursive: true })
  return dir
}

const registries: BackgroundShellRegistry[] = []
function setup() {
  const registry = new BackgroundShellRegistry()
  registries.push(registry)
  const notes: { display: string; model: string; status: string }[] = []
  registry.setNotificationCallback((display, model, meta) => notes.push({ display, model, status: meta.status }))
  return { registry, notes }
}
afterEach(() => {
  for (const r of registries.splice(0)) r.abortAll()
})

const sidecar = (path: string) => JSON.parse(readFileSync(path, 'utf8'))

describe('an output file that cannot be opened fails the shell and runs nothing', () => {
  // Each case plants something at <outputDir>/shell-<id>.output.
  const cases: [string, (path: string, dir: string) => (() => void) | void, RegExp][] = [
    [
      'a symlink',
      (path, dir) => {
        writeFileSync(join(dir, 'secret'), 'keep me')
        symlinkSync(join(dir, 'secret'), path)
      },
      /Too many levels of symbolic links \(os error 40\)$/,
    ],
    ['a FIFO with no reader (must not block)', (path) => void execFileSync('mkfifo', [path]), /No such device or address \(os error 6\)$/],
    [
      'a FIFO with a reader',
      (path) => {
        execFileSync('mkfifo', [path])
        const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
        return () => closeSync(reader)
      },
      /not a regular file$/,
    ],
    ['a directory', (path) => mkdirSync(path), /Is a directory \(os error 21\)$/],
  ]
  for (const [what, plant, osError] of cases) {
    it(`${what} at the output path`, async () => {
      const { registry, notes } = setup()
      const dir = freshDir()
      const outputPath = join(dir, 'shell-planted.output')
      const cleanup = plant(outputPath, dir)
      const marker = join(dir, 'ran')
      try {
        const h = executeBackground({ command: `touch ${marker}`, cwd: '/tmp', outputDir: dir, registry, shellId: 'planted' })
        expect(h.pid).toBeUndefined()
        const result = await h.done
        expect(result).toMatchObject({ shellId: 'planted', status: 'failed', exitCode: null, signal: null, aborted: false, bytesRead: 0 })
        expect(result.error).toMatch(new RegExp(`^Cannot open output file ${outputPath}: `))
        expect(result.error).toMatch(osError)
        expect(existsSync(marker)).toBe(false)
        expect(registry.get('planted')).toMatchObject({ status: 'failed', error: result.error })
        expect(notes.map((n) => n.status)).toEqual(['failed'])
        expect(notes[0].model).toContain(`<result>Cannot open output file ${outputPath}: `)
        expect(sidecar(h.statusPath)).toMatchObject({ id: 'planted', status: 'failed', error: result.error })
        if (what === 'a symlink') expect(readFileSync(join(dir, 'secret'), 'utf8')).toBe('keep me')
      } finally {
        cleanup?.()
      }
    })
  }

  it('an outputDir that cannot be written throws before anything runs', () => {
    const { registry } = setup()
    const dir = freshDir()
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', dir])
    mounts.push(dir)
    const marker = join(scratch, 'ran-in-readonly')
    expect(() => executeBackground({ command: `touch ${marker}`, cwd: '/tmp', outputDir: dir, registry })).toThrowError(
      /^The "outputDir" directory .* is not writable: EROFS: Read-only file system$/,
    )
    expect(existsSync(marker)).toBe(false)
    expect(registry.getAll()).toEqual([])
  })
})

describe('done reports the status the registry settled the shell with', () => {
  it('100 shells, abortAll: every done says cancelled, evicted or not', async () => {
    const { registry } = setup()
    const handles = Array.from({ length: 100 }, () => executeBackground({ command: 'sleep 30', cwd: '/tmp', outputDir: freshDir(), registry }))
    registry.abortAll()
    expect(registry.getAll()).toHaveLength(32)
    const results = await Promise.all(handles.map((h) => h.done))
    expect(results.filter((r) => r.status !== 'cancelled')).toEqual([])
    expect(results.every((r) => r.aborted && r.error === undefined)).toBe(true)
    for (const h of handles) expect(sidecar(h.statusPath).status).toBe('cancelled')
    for (const h of handles) await waitFor(() => !isAlive(h.pid!), 3000, `pid ${h.pid}`)
  })

  it('cancelled, then evicted or reset away before the child is gone: still cancelled', async () => {
    const { registry } = setup()
    // A child that ignores SIGTERM outlives the cancel by the 200 ms SIGKILL grace.
    const stubborn = () =>
      executeBackground({ command: "trap '' TERM; echo ready; while :; do sleep 0.05; done", cwd: '/tmp', outputDir: freshDir(), registry })
    const evicted = stubborn()
    const reset = stubborn()
    for (const h of [evicted, reset]) await waitFor(() => existsSync(h.outputPath) && readFileSync(h.outputPath, 'utf8') === 'ready\n', 3000)
    registry.cancel(evicted.shellId, Date.now())
    for (let i = 0; i < 33; i++) {
      registry.register({ shellId: `x${i}`, command: 'true', cwd: '/tmp', status: 'running', startTime: Date.now(), outputPath: join(freshDir(), 'x.output'), abortController: new AbortController() })
      registry.complete(`x${i}`, 0, Date.now())
    }
    expect(registry.getAll().map((e) => e.id)).not.toContain(evicted.shellId)
    registry.cancel(reset.shellId, Date.now())
    registry.reset()
    const results = await Promise.all([evicted.done, reset.done])
    expect(results.map((r) => r.status)).toEqual(['cancelled', 'cancelled'])
  })

  it('reset does not kill: done and the sidecar report how the child really ended', async () => {
    const { registry, notes } = setup()
    const go = join(freshDir(), 'go')
    const wait = `until [ -e ${go} ]; do sleep 0.02; done`
    const ok = executeBackground({ command: `${wait}; echo fine`, cwd: '/tmp', outputDir: freshDir(), registry })
    const bad = executeBackground({ command: `${wait}; exit 3`, cwd: '/tmp', outputDir: freshDir(), registry })
    const killed = executeBackground({ command: `${wait}; kill -TERM $$`, cwd: '/tmp', outputDir: freshDir(), registry })
    registry.reset()
    expect(registry.getAll()).toEqual([])
    for (const h of [ok, bad, killed]) expect(isAlive(h.pid!)).toBe(true)
    writeFileSync(go, '')
    const [a, b, c]: BackgroundShellResult[] = await Promise.all([ok.done, bad.done, killed.done])
    expect(a).toMatchObject({ status: 'completed', exitCode: 0, aborted: false })
    expect(a.error).toBeUndefined()
    expect(b).toMatchObject({ status: 'failed', exitCode: 3, error: 'exited with code 3' })
    expect(c).toMatchObject({ status: 'failed', signal: 15, error: 'terminated by signal 15' })
    expect(readFileSync(ok.outputPath, 'utf8')).toBe('fine\n')
    // The entries left the registry: no notification, but the sidecars are true.
    expect(notes).toEqual([])
    expect(sidecar(ok.statusPath)).toMatchObject({ status: 'completed', exitCode: 0 })
    expect(sidecar(bad.statusPath)).toMatchObject({ status: 'failed', error: 'exited with code 3' })
    expect(sidecar(killed.statusPath)).toMatchObject({ status: 'failed', error: 'terminated by signal 15' })
    expect(sidecar(ok.statusPath).endTime).toMatch(/Z$/)
  })
})

describe('a full disk', () => {
  it('fails the shell with ENOSPC and the sidecar on disk still says failed', async () => {
    const { registry, notes } = setup()
    const dir = freshDir()
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir])
    mounts.push(dir)
    const h = executeBackground({ command: 'head -c 1048576 /dev/zero | tr "\\0" x; echo done', cwd: '/tmp', outputDir: dir, registry })
    expect(sidecar(h.statusPath).status).toBe('running')
    const result = await h.done
    expect(result.status).toBe('failed')
    expect(result.error).toMatch(/No space left on device \(os error 28\)/)
    expect(notes.map((n) => n.status)).toEqual(['failed'])
    // The bytes that did reach the disk before it filled are counted as written.
    expect(result.bytesWritten).toBeGreaterThan(0)
    expect(result.bytesWritten).toBe(statSync(h.outputPath).size)
    expect(result.bytesWritten + result.bytesNotWritten).toBe(result.bytesRead)
    const onDisk = sidecar(h.statusPath)
    expect(onDisk).toMatchObject({ id: h.shellId, status: 'failed', error: result.error, pid: h.pid })
    expect(onDisk.endTime).toMatch(/Z$/)
  })
})
