// readTaskOutput (API.md §6.4): bounded incremental reads of real output files, polled while a
// real child process writes them; grep; the end of the file; the opening rules; bad options.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

import {
  BackgroundShellRegistry,
  executeBackground,
  readTaskOutput,
  type OutputTailError,
  type ReadTaskOutputOptions,
  type TaskOutputRead,
} from '../index.js'
import { sleep } from './support/process'

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-read-output-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let fileCount = 0
function file(content: string | Buffer): string {
  const path = join(scratch, `out-${++fileCount}.output`)
  writeFileSync(path, content)
  return path
}

function read(path: string, options?: ReadTaskOutputOptions): TaskOutputRead {
  const result = readTaskOutput(path, options)
  if ('error' in result) throw new Error(result.error)
  return result
}

/** Polls from `from` until a read returns `nextOffset === offset`; the texts, concatenated. */
function pollToEnd(path: string, options: ReadTaskOutputOptions = {}, from = 0) {
  let offset = from
  let text = ''
  let matched = 0
  for (;;) {
    const r = read(path, { ...options, offset })
    text += r.text
    matched += r.matchedLines ?? 0
    if (r.nextOffset === offset) return { text, matched, end: r }
    offset = r.nextOffset
  }
}

/** A poller of a growing file: each `step()` reads what is new, from the last `nextOffset`. */
function poller(path: string, options: ReadTaskOutputOptions = {}) {
  let offset = 0
  let text = ''
  let reads = 0
  return {
    step() {
      const r = read(path, { ...options, offset })
      reads++
      text += r.text
      expect(r.nextOffset).toBeGreaterThanOrEqual(offset)
      const moved = r.nextOffset !== offset
      offset = r.nextOffset
      return moved
    },
    get text() {
      return text
    },
    get reads() {
      return reads
    },
  }
}

describe('reading what is new', () => {
  it('returns the sanitised text, not trimmed, and where to go on', () => {
    const content = '  one\x1b[31m red\x1b[0m\r\nprogress 10%\rprogress 100%\n\ttab\x07bell  \n\n'
    const size = Buffer.byteLength(content)
    const path = file(content)
    const r = read(path)
    expect(r).toEqual({
      text: '  one red\nprogress 100%\n\ttabbell  \n\n',
      offset: 0,
      nextOffset: size,
      totalBytes: size,
      truncated: false,
    })
    expect('matchedLines' in r).toBe(false)
    // At the end: '' and nextOffset === offset.
    expect(read(path, { offset: size })).toEqual({ text: '', offset: size, nextOffset: size, totalBytes: size, truncated: false })
  })

  it('stops after the last line end of the window, so that a redraw is never split', () => {
    const path = file('alpha\nbeta 1%\rbeta 99%\ngamma\n')
    const first = read(path, { maxBytes: 16 })
    expect(first).toMatchObject({ text: 'alpha\n', nextOffset: 6, truncated: true })
    const second = read(path, { offset: 6, maxBytes: 16 })
    expect(second).toMatchObject({ text: '', nextOffset: 14, truncated: true }) // 'beta 1%\r' is overwritten
    expect(pollToEnd(path, { maxBytes: 16 }).text).toBe('alpha\nbeta 99%\ngamma\n')
    // Exact whenever each frame, with the next one's first character, fits in maxBytes (9 here).
    for (let maxBytes = 9; maxBytes <= 40; maxBytes++) {
      expect(pollToEnd(path, { maxBytes }).text, `maxBytes ${maxBytes}`).toBe('alpha\nbeta 99%\ngamma\n')
    }
  })

  it('never splits a UTF-8 character, whatever maxBytes', () => {
    const text = 'héllo wörld €𝄞 你好\n'.repeat(20) + 'no newline at the end: 𝄞'
    const path = file(text)
    for (let maxBytes = 4; maxBytes <= 70; maxBytes++) {
      const { text: polled } = pollToEnd(path, { maxBytes })
      expect(polled, `maxBytes ${maxBytes}`).toBe(text)
      expect(polled).not.toContain('\uFFFD')
    }
  })

  it('holds back an unfinished character at the end of the file until it is complete', () => {
    const euro = Buffer.from('€')
    const path = file(Buffer.concat([Buffer.from('price: '), euro.subarray(0, 2)]))
    expect(read(path)).toMatchObject({ text: 'price: ', nextOffset: 7, totalBytes: 9, truncated: false })
    expect(read(path, { offset: 7 })).toMatchObject({ text: '', nextOffset: 7 })
    writeFileSync(path, Buffer.concat([Buffer.from('price: '), euro, Buffer.from('5\n')]))
    expect(read(path, { offset: 7 })).toMatchObject({ text: '€5\n', nextOffset: 12 })
  })

  it('an offset past the end (the file shrank) reads nothing and points at the end', () => {
    const path = file('short\n')
    expect(read(path, { offset: 1000 })).toEqual({ text: '', offset: 1000, nextOffset: 6, totalBytes: 6, truncated: false })
    expect(read(path, { offset: 6, grep: 'x' })).toEqual({
      text: '',
      offset: 6,
      nextOffset: 6,
      totalBytes: 6,
      truncated: false,
      matchedLines: 0,
    })
  })

  it('an offset inside a character starts after it', () => {
    const path = file('a€b\n')
    expect(read(path, { offset: 2 })).toMatchObject({ text: 'b\n', offset: 4, nextOffset: 6 })
  })
})

describe('grep', () => {
  it('keeps the matching sanitised lines and counts them', () => {
    const path = file('ok 1\n\x1b[31merror\x1b[0m: disk full\nwarn: slow\r\nok 2\nERROR ignored\nerror: half')
    const r = read(path, { grep: '^(error|warn):' })
    expect(r).toMatchObject({ text: 'error: disk full\nwarn: slow\n', matchedLines: 2, truncated: false })
    // The unfinished last line is not tested until its line end arrives.
    expect(r.nextOffset).toBe(r.totalBytes - 'error: half'.length)
    expect(read(path, { offset: r.nextOffset, grep: '^(error|warn):' })).toMatchObject({
      text: '',
      nextOffset: r.nextOffset,
      matchedLines: 0,
    })
    // Rust syntax: inline flags (Unicode case folding), Unicode-aware \w.
    expect(read(path, { grep: '(?i-u)^error ' })).toMatchObject({ text: 'ERROR ignored\n', matchedLines: 1 })
    expect(read(path, { grep: '(?i)^error ' })).toMatchObject({ text: 'ERROR ignored\n', matchedLines: 1 })
    expect(read(file('ünïcödé\nascii\n- no\n'), { grep: '^\\w+$' })).toMatchObject({ matchedLines: 2 })
  })

  it('a redrawn line is tested as its last frame, once', () => {
    const path = file('build 10%\rbuild failed\nfetch error 1%\rfetch done\n')
    expect(read(path, { grep: 'error|failed' })).toMatchObject({ text: 'build failed\n', matchedLines: 1 })
  })

  it('polling with grep at any maxBytes finds each matching line once', () => {
    const lines = Array.from({ length: 200 }, (_, i) => (i % 7 === 0 ? `error ${i}: ✗ failed` : `ok ${i} ✓`))
    const path = file(lines.join('\n') + '\n')
    const wanted = lines.filter((l) => l.startsWith('error')).map((l) => l + '\n').join('')
    for (const maxBytes of [32, 100, 4096, 65536]) {
      const { text, matched } = pollToEnd(path, { maxBytes, grep: '^error' })
      expect(text, `maxBytes ${maxBytes}`).toBe(wanted)
      expect(matched).toBe(29)
    }
  })
})

describe('while a real child process writes the file', () => {
  it('polls reconstruct the sanitised file, multi-byte characters split across writes included', async () => {
    // The child writes every chunk with its own write(2), with pauses between them. Plain lines
    // are split at random byte positions (inside characters too); lines with escape sequences
    // or carriage-return redraws are written whole and never across a page, so a poll at the
    // end of the file sees all of such a line or none of it.
    let seed = 7
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const mixed: Buffer[] = []
    const plain: Buffer[] = []
    let mixedSize = 0
    let expectedMixed = ''
    let expectedPlain = ''
    const pushSplit = (chunks: Buffer[], line: string) => {
      const bytes = Buffer.from(line)
      const cut1 = random(bytes.length)
      const cut2 = cut1 + random(bytes.length - cut1)
      for (const part of [bytes.subarray(0, cut1), bytes.subarray(cut1, cut2), bytes.subarray(cut2)]) {
        if (part.length > 0) chunks.push(part)
      }
      return bytes.length
    }
    for (let i = 0; i < 400; i++) {
      const line = `line ${i}: héllo wörld €${'𝄞'.repeat(random(4))} 你好 ${'é'.repeat(random(30))}\n`
      expectedPlain += line
      pushSplit(plain, line)
      if (i % 3 === 0) {
        const whole = i % 2 === 0 ? `\x1b[32mok\x1b[0m ${i} ✓\n` : `step ${i} 10%\r\x1b[Kstep ${i} 100% ✓\n`
        const size = Buffer.byteLength(whole)
        if (Math.floor(mixedSize / 4096) !== Math.floor((mixedSize + size - 1) / 4096)) {
          const filler = 'f'.repeat(4096 - (mixedSize % 4096) - 1) + '\n'
          mixed.push(Buffer.from(filler))
          expectedMixed += filler
          mixedSize += filler.length
        }
        mixed.push(Buffer.from(whole))
        expectedMixed += i % 2 === 0 ? `ok ${i} ✓\n` : `step ${i} 100% ✓\n`
        mixedSize += size
      } else {
        expectedMixed += line
        mixedSize += pushSplit(mixed, line)
      }
    }
    const mixedPath = file('')
    const plainPath = file('')
    const plan = join(scratch, 'plan.json')
    writeFileSync(
      plan,
      JSON.stringify({
        mixedPath,
        plainPath,
        mixed: mixed.map((b) => b.toString('base64')),
        plain: plain.map((b) => b.toString('base64')),
      }),
    )
    const writer = `
      const fs = require('node:fs')
      const plan = JSON.parse(fs.readFileSync(process.argv[1], 'utf8'))
      const pause = new Int32Array(new SharedArrayBuffer(4))
      const files = [[fs.openSync(plan.mixedPath, 'a'), plan.mixed], [fs.openSync(plan.plainPath, 'a'), plan.plain]]
      const longest = Math.max(plan.mixed.length, plan.plain.length)
      for (let i = 0; i < longest; i++) {
        for (const [fd, chunks] of files) if (i < chunks.length) fs.writeSync(fd, Buffer.from(chunks[i], 'base64'))
        if (i % 4 === 0) Atomics.wait(pause, 0, 0, 1)
      }
    `
    const child = spawn(process.execPath, ['-e', writer, plan], { stdio: 'ignore' })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    let running = true
    void exited.then(() => (running = false))
    const pollers = [
      poller(mixedPath),
      poller(mixedPath, { maxBytes: 64 }),
      poller(plainPath, { maxBytes: 4 }),
      poller(plainPath, { maxBytes: 13 }),
      poller(plainPath),
    ]
    while (running) {
      // Each poller catches up with the writer (a bounded number of reads per turn).
      for (const p of pollers) for (let k = 0; k < 2000 && p.step(); k++);
      await sleep(random(3))
    }
    expect(await exited).toBe(0)
    for (const p of pollers) while (p.step());
    expect(pollers[0].text).toBe(expectedMixed)
    expect(pollers[1].text).toBe(expectedMixed)
    for (const p of pollers.slice(2)) expect(p.text).toBe(expectedPlain)
    // Polled while it grew: more than one read each.
    for (const p of pollers) expect(p.reads).toBeGreaterThan(2)
    // The same as one read of the finished file.
    expect(read(mixedPath, { maxBytes: 16 * 1024 * 1024 }).text).toBe(expectedMixed)
  })
})

describe('the output file of a real background shell', () => {
  const registries: BackgroundShellRegistry[] = []
  afterEach(() => {
    for (const r of registries.splice(0)) r.abortAll()
  })

  it('is polled while the shell runs, and the polls add up to the file', async () => {
    const registry = new BackgroundShellRegistry()
    registries.push(registry)
    const h = executeBackground({
      command:
        "for i in $(seq 1 150); do printf '\\033[1mline %d\\033[0m: héllo €𝄞 你好\\n' $i; if [ $((i % 50)) = 0 ]; then sleep 0.05; fi; done; echo error: the end",
      cwd: '/tmp',
      outputDir: join(scratch, 'shells'),
      registry,
    })
    const all = poller(h.outputPath, { maxBytes: 512 })
    const errors = poller(h.outputPath, { grep: '^error' })
    let settled = false
    void h.done.then(() => (settled = true))
    while (!settled) {
      all.step()
      errors.step()
      await sleep(5)
    }
    expect((await h.done).status).toBe('completed')
    while (all.step());
    while (errors.step());
    const expected = Array.from({ length: 150 }, (_, i) => `line ${i + 1}: héllo €𝄞 你好\n`).join('') + 'error: the end\n'
    expect(all.text).toBe(expected)
    expect(errors.text).toBe('error: the end\n')
    expect(all.reads).toBeGreaterThan(2)
  })
})

describe('opening the file', () => {
  it('a FIFO is refused without blocking', () => {
    const fifo = join(scratch, 'pipe.output')
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0)
    // No writer: a blocking open would hang here.
    expect(readTaskOutput(fifo)).toEqual({ error: `EINVAL: not a regular file, read '${fifo}'` })
  })

  it('a symlink is refused, never followed', () => {
    const target = file('secret\n')
    const link = join(scratch, 'link.output')
    symlinkSync(target, link)
    const result = readTaskOutput(link) as OutputTailError
    expect(result.error).toMatch(/^ELOOP: .*, open '.*link\.output'$/)
  })

  it('a missing file, a directory and a device are errors', () => {
    const missing = join(scratch, 'missing.output')
    expect(readTaskOutput(missing)).toEqual({ error: `ENOENT: no such file or directory, open '${missing}'` })
    expect(readTaskOutput(scratch)).toEqual({ error: `EISDIR: illegal operation on a directory, read '${scratch}'` })
    expect(readTaskOutput('/dev/zero')).toEqual({ error: "EINVAL: not a regular file, read '/dev/zero'" })
  })
})

describe('bad arguments', () => {
  const path = file('x\n')
  const call = (...args: unknown[]) => () => (readTaskOutput as (...a: unknown[]) => unknown)(...args)

  it('outputFile must be a string, options an object', () => {
    for (const bad of [undefined, null, 42, {}, Buffer.from('x')]) {
      expect(call(bad), String(bad)).toThrowError(TypeError)
      expect(call(bad)).toThrowError(/"outputFile"/)
    }
    for (const bad of [null, 42, 'offset', true]) {
      expect(call(path, bad), String(bad)).toThrowError(TypeError)
      expect(call(path, bad)).toThrowError(/"options"/)
    }
  })

  it('offset: a non-negative safe integer', () => {
    for (const bad of ['5', 5n, {}, null]) {
      expect(call(path, { offset: bad }), String(bad)).toThrowError(TypeError)
      expect(call(path, { offset: bad })).toThrowError(/"options\.offset"/)
    }
    for (const bad of [-1, 1.5, NaN, Infinity, -Infinity, 2 ** 53]) {
      expect(call(path, { offset: bad }), String(bad)).toThrowError(RangeError)
      expect(call(path, { offset: bad })).toThrowError(/"options\.offset"/)
    }
    expect(read(path, { offset: Number.MAX_SAFE_INTEGER })).toMatchObject({ text: '', nextOffset: 2 })
  })

  it('maxBytes: an integer from 4 to 16 MiB', () => {
    for (const bad of [0, 3, -4, 16 * 1024 * 1024 + 1, 4.5, NaN, Infinity]) {
      expect(call(path, { maxBytes: bad }), String(bad)).toThrowError(RangeError)
      expect(call(path, { maxBytes: bad })).toThrowError(/"options\.maxBytes"/)
    }
    expect(call(path, { maxBytes: '64' })).toThrowError(TypeError)
    expect(call(path, { maxBytes: '64' })).toThrowError(/"options\.maxBytes"/)
    expect(read(path, { maxBytes: 4 }).text).toBe('x\n')
    expect(read(path, { maxBytes: 16 * 1024 * 1024 }).text).toBe('x\n')
  })

  it('grep: a string that compiles as a Rust regex, else a SyntaxError quoting the parser', () => {
    expect(call(path, { grep: 5 })).toThrowError(TypeError)
    expect(call(path, { grep: /x/ })).toThrowError(/"options\.grep"/)
    let error: unknown
    try {
      readTaskOutput(path, { grep: 'unclosed (group' })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(SyntaxError)
    expect((error as Error).message).toContain('"options.grep"')
    expect((error as Error).message).toContain('unclosed group')
    // Look-around is not Rust syntax (linear time only).
    expect(call(path, { grep: '(?=x)' })).toThrowError(SyntaxError)
    expect(call(path, { grep: '(?=x)' })).toThrowError(/look-around/)
  })
})
