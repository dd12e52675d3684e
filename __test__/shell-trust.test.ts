// Background shells stay truthful whatever the output directory holds (issue
// 9): an output file that cannot be opened fails the shell before anything
// runs. Real processes, real files, and a real (tiny) tmpfs.
import { execFileSync } from 'node:child_process'
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import { BackgroundShellRegistry, executeBackground } from '../index.js'

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
