// Writes the seed corpus of every fuzz target to fuzz/corpus/<target>/ from spec/vectors.json
// and a few hand-picked inputs (split UTF-8, ANSI sequences, long lines through the repeat
// header). Run `node fuzz/seeds.mjs` after changing the input format of a target; the files
// are committed. Regression seeds (minimised crashes) live in fuzz/corpus/<target>/regress-*
// and are kept: this script only rewrites the files named `seed-*`.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const fuzzDir = dirname(fileURLToPath(import.meta.url))
const vectors = JSON.parse(readFileSync(join(fuzzDir, '..', 'spec', 'vectors.json'), 'utf8'))

const utf8 = (s) => Buffer.from(s, 'utf8')
const u16 = (n) => Buffer.from([n & 0xff, (n >> 8) & 0xff])

/** `taskstream_fuzz::Cuts` header: chunk lengths, and the repeat code (0–7, see REPEATS). */
function cuts(lengths, repeatCode = 0) {
  return Buffer.concat([Buffer.from([(repeatCode << 5) | lengths.length]), ...lengths.map(u16)])
}

/** Cut patterns every text seed is tried with: whole, byte by byte, uneven, with empty reads. */
const CUTS = [cuts([]), cuts([1]), cuts([2, 5, 3]), cuts([0, 4])]

function write(target, seeds) {
  const dir = join(fuzzDir, 'corpus', target)
  mkdirSync(dir, { recursive: true })
  for (const name of readdirSync(dir)) {
    if (name.startsWith('seed-')) rmSync(join(dir, name))
  }
  const seen = new Set()
  for (const seed of seeds) {
    const hash = createHash('sha1').update(seed).digest('hex').slice(0, 12)
    if (seen.has(hash)) continue
    seen.add(hash)
    writeFileSync(join(dir, `seed-${hash}`), seed)
  }
  console.log(`${target}: ${seen.size} seeds`)
}

const strings = (table) => vectors[table].map((c) => c.input).filter((i) => typeof i === 'string')

// guards: every command of the guard tables; validateMonitorParams rows as
// `command \0 directory \0 max_events`.
const guardTables = [
  'detectBlockedSleepPattern',
  'stripTrailingBackgroundAmp',
  'trimTrailingShellComment',
  'splitTrailingShellComment',
  'hasTopLevelTrailingBackgroundOperator',
  'stripShellWrapper',
  'normalizeMonitorCommand',
  'hasUnsafeMonitorBackgroundOperator',
]
const guardSeeds = guardTables.flatMap(strings).map(utf8)
for (const { input } of vectors.validateMonitorParams) {
  const { command, directory, max_events: maxEvents } = input.params
  if (typeof command !== 'string') continue
  let seed = command
  if (typeof directory === 'string' || maxEvents !== undefined) {
    const relative = typeof directory === 'string' ? directory.replace(/^\/srv\/project-a\/?/, '') : ''
    seed += `\0${relative}`
    if (maxEvents !== undefined) seed += `\0${maxEvents}`
  }
  guardSeeds.push(utf8(seed))
}
guardSeeds.push(utf8('sleep 5 # intentional-sleep: wait for MCP rate limit reset'))
guardSeeds.push(utf8('tail -f app.log\0sub\x005'))
guardSeeds.push(utf8('tail -f app.log\0out/skills'))
write('guards', guardSeeds)

// Texts with escape sequences, split UTF-8 and lines, for the streaming targets.
const texts = [
  ...strings('stripAnsi'),
  ...strings('sanitizeMonitorLine'),
  ...strings('stripTerminalControlSequences'),
  ...vectors.readTaskOutputTail.map((c) => c.input.fileContent),
  '你好\n😀 end\n',
  'a\x1b[31mred\x1b[0m 你好\r\n\n  \nx\x1b]0;title\x07y\n😀 end\npartial',
  '\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n',
  '\u009b31mred\u009c\n',
  'line one\nline two\n\n\n   \n\t\nreal1\nreal2\nreal3\nreal4\nreal5\nl6\nl7\n',
  '<result>boom</result>\x7f\n',
]
const textBytes = [...texts.map(utf8), Buffer.from([0x61, 0xe2, 0x82, 0x0a, 0xf0, 0x9f, 0x98, 0x80, 0xff, 0xc0, 0xaf, 0x0a])]
// Each text with one cut pattern, in turn.
const withCuts = (t, i) => Buffer.concat([CUTS[i % CUTS.length], t])
const textSeeds = textBytes.map(withCuts)
// Long sequences and lines through the repeat header (codes 6 and 7: ×16, ×256, all but the
// last byte, up to 12 KiB).
const repeated = [
  [cuts([100], 7), 'x'.repeat(64)],
  [cuts([7], 7), '\x1b]0;' + 'y'.repeat(20)],
  [cuts([1000], 7), '\x1b]0;title' + 'z'.repeat(30) + '\x07'],
  [cuts([4000, 96], 7), '\x1b]' + 'w'.repeat(40) + '\x1b\\'],
  [cuts([64], 7), '\x1b[1;2;3;4;5;6;7;8;9'],
  [cuts([999], 6), 'A'.repeat(1000)],
  [cuts([4097], 7), 'abc\n' + 'd'.repeat(50)],
  [cuts([3], 7), '😀 '.repeat(8) + '\n'],
  [cuts([5, 4096]), '\x1b]0;' + 'x'.repeat(4000) + '\x07after\n'],
]
const repeatedSeeds = repeated.map(([h, t]) => Buffer.concat([h, utf8(t)]))
write('text_stream', [...textSeeds, ...repeatedSeeds])

const lineBufferTexts = vectors.LineBuffer.map((c) => c.input.chunks.join(''))
const splitterSeeds = [...textSeeds, ...repeatedSeeds, ...lineBufferTexts.map((t, i) => withCuts(utf8(t), i + 1))]
write('line_splitter', splitterSeeds)

// line_buffer: `[cap][Cuts header][payload]`, the LineBuffer vectors' chunks as the reads.
const lineBufferSeeds = vectors.LineBuffer.map((c) => {
  const chunks = c.input.chunks.filter((x) => typeof x === 'string').map(utf8)
  const cap = c.input.options.maxLineCodePoints ?? 0
  return Buffer.concat([Buffer.from([cap]), cuts(chunks.map((x) => x.length)), ...chunks])
})
lineBufferSeeds.push(Buffer.concat([Buffer.from([4]), cuts([5, 1, 1]), utf8('abcd\r\nxyz\r\n')]))
lineBufferSeeds.push(Buffer.concat([Buffer.from([0]), cuts([4096], 7), utf8('z'.repeat(64))]))
lineBufferSeeds.push(Buffer.concat([Buffer.from([3]), cuts([1]), utf8('🙂🐱🙂🐱🙂\n🙂\r\n')]))
write('line_buffer', lineBufferSeeds)

// monitor_pipeline: `[config][h][n × (u16 length, u8 control)][payload]`.
function pipeline(config, reads, text, repeatCode = 0) {
  const header = Buffer.from([config, (repeatCode << 5) | reads.length])
  const records = reads.map(([len, control]) => Buffer.concat([u16(len), Buffer.from([control])]))
  return Buffer.concat([header, ...records, utf8(text)])
}
const STDERR = 1
const FLUSH = 0x20
const step = (k) => k << 1
const pipelineSeeds = [
  ...texts.map((t, i) => (i % 2 ? pipeline(1, [[3, 0], [5, STDERR]], t) : pipeline(0, [], t))),
  pipeline(0, [[7, 0], [9, STDERR], [10, 0]], 'partial\nerr line\n complete\n'),
  pipeline(1, [[25, 0], [3, step(8)], [3, step(8) | STDERR]], 'l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n'),
  pipeline(1, [[30, step(12)], [4, step(13)], [6, step(8)]], 'l1\nl2\nl3\nl4\nl5\nl11\nl12a\nl12b\n'),
  pipeline(1, [[4, 0], [40, step(14)]], 'b1\nb2\nb3\nb4\nb5\nb6\n'),
  pipeline(0, [[5, FLUSH], [9, 0xc0]], 'tail \xe2 more\nlate\n'),
  pipeline(1, [[1000, 0]], 'y\n', 7),
  pipeline(3, [[333, STDERR]], 'x\x1b[31m\n\x01\n', 6),
  pipeline(0, [[100, 0]], 'x'.repeat(64) + '\n', 7),
]
write('monitor_pipeline', pipelineSeeds)

// output_tail: `[h][u16 maxBytes][payload]`; low bits of h: 1 default 8192, 3 65536,
// 5 usize::MAX, 6+ the given number.
const tailSeeds = vectors.readTaskOutputTail.map((c) => {
  const max = c.input.maxBytes
  const code = max === undefined ? 1 : max === 65536 ? 3 : 6
  return Buffer.concat([Buffer.from([code]), u16(max ?? 0), utf8(c.input.fileContent)])
})
tailSeeds.push(Buffer.concat([Buffer.from([6]), u16(4), utf8('€€€€')]))
// Repeat codes 6 and 7: ×4096, ×65536, up to 80 KiB, past the 64 KiB cap.
tailSeeds.push(Buffer.concat([Buffer.from([(7 << 5) | 3]), u16(0), utf8('0123456789abcd€\n')]))
tailSeeds.push(Buffer.concat([Buffer.from([(6 << 5) | 5]), u16(0), utf8('\x1b]2;title\x07frame 1%\rframe 2%\r\n')]))
tailSeeds.push(Buffer.concat([Buffer.from([(6 << 5) | 4]), u16(0), utf8('€')]))
write('output_tail', tailSeeds)
