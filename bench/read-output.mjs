// readTaskOutput benchmark (API.md §6.4): a 1 GiB output file, written once in a temporary
// directory (removed at the end, on a signal too), polled from offset 0 to the end in 64 KiB
// steps, each read starting at the previous nextOffset, until a read returns
// nextOffset === offset. Side by side, the pure-JavaScript way of doing the same: fs.readSync of
// the same 64 KiB windows into one Buffer, a streaming TextDecoder, the unfinished last line
// carried to the next window (as readTaskOutput stops after the last `\n`), and the CONTRACT.md §2.14
// steps 5–7 in JavaScript (the four escape-sequence regex passes, a control-character regex,
// the `\r` frame rule) on the rest. Both must produce the same number of UTF-16 units.
//
// The file repeats a block of agent-style output: plain log lines, SGR-coloured lines,
// non-ASCII text (✓, “quotes”, 你好, box drawing), `\r` progress redraws, an OSC window title,
// a CRLF line and control characters. The page cache holds it (written just before): this
// measures the read, the sanitising and the JS string, not the disk.
//
// Rows: readTaskOutput (64 KiB), readTaskOutput with a grep, and the JS way; each the median of
// BENCH_RUNS [3] runs, interleaved, as GB/s of wall time and of the process's CPU time (this
// machine is shared: CPU time is the steadier of the two). A second table polls single-shape
// files of BENCH_SHAPE_READ_BYTES [256 MiB] natively (plain, SGR-coloured, `\r` redraws, dense
// non-ASCII text), one run each. BENCH_READ_BYTES [2^30] sets the size, BENCH_READ_STEP [65536]
// the step. BENCH_BINARY=<path> picks the binary. Only a default run replaces the read-output
// section of bench/RESULTS.md (BENCH_WRITE=1 forces it).
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, table, undisturbed, waitForQuiet, writeSection } from './lib/report.mjs'

const CFG = {
  bytes: envInt('BENCH_READ_BYTES', 2 ** 30),
  step: envInt('BENCH_READ_STEP', 65536),
  runs: envInt('BENCH_RUNS', 3),
  shapeBytes: envInt('BENCH_SHAPE_READ_BYTES', 2 ** 28),
}
const GOAL_GB_PER_S = 1
const GREP = '^(error|warning)\\b'

/** About 100 KB of output, ending with `\n`: what an agent's build and test logs look like. */
function outputBlock() {
  const lines = []
  let size = 0
  for (let i = 0; size < 100_000; i++) {
    let line
    switch (i % 20) {
      case 3:
        line = `\x1b[32mINFO\x1b[0m compiled crate-${i} v1.${i % 9}.0 in 0.${i % 97}s`
        break
      case 7:
        line = `\x1b[1m\x1b[33mwarning\x1b[0m: unused variable \`x${i}\` at src/lib.rs:${i}:9`
        break
      case 9:
        line = `  ✓ test “parses header ${i}” passes — ${i % 50} ms 你好 ────`
        break
      case 12:
        line = `downloading 10%\rdownloading 55%\r\x1b[Kdownloading 100% [${'='.repeat(30)}]`
        break
      case 15:
        line = `\x1b]0;build ${i}\x07error: test ${i} failed\r`
        break
      case 18:
        line = `tab\tseparated\tfields ${i}\x08\x07 and a bell`
        break
      default:
        line = `2026-11-24T10:00:${String(i % 60).padStart(2, '0')}.123Z request GET /api/items/${i} handled in ${i % 300} ms (cache ${i % 2 ? 'hit' : 'miss'})`
    }
    lines.push(line)
    size += Buffer.byteLength(line) + 1
  }
  return Buffer.from(lines.join('\n') + '\n')
}

/** About 100 KB of one line shape, ending with `\n`. */
function shapeBlock(line) {
  const lines = []
  let size = 0
  for (let i = 0; size < 100_000; i++) {
    lines.push(line(i))
    size += Buffer.byteLength(lines[i]) + 1
  }
  return Buffer.from(lines.join('\n') + '\n')
}

const SHAPES = {
  plain: {
    label: 'plain ASCII log lines',
    line: (i) => `2026-11-24T10:00:00.123Z request GET /api/items/${i} handled in ${i % 300} ms (cache hit)`,
  },
  sgr: { label: 'SGR-coloured lines', line: (i) => `\x1b[32mINFO\x1b[0m compiled crate-${i} v1.0.0 in 0.5s, \x1b[1m${i % 7}\x1b[0m warnings` },
  redraws: { label: '`\\r` progress redraws, three frames a line', line: (i) => `fetch 10%\rfetch 55%\r\x1b[Kfetch 100% [${'='.repeat(20)}] ${i}` },
  cjk: { label: 'dense non-ASCII text (✓, “”, —, CJK, box drawing)', line: (i) => `  ✓ 测试 “解析头部 ${i}” 通过 — ${i % 50} 毫秒 ────────` },
}

function writeOutputFile(path, block = outputBlock(), bytes = CFG.bytes) {
  const repeat = Math.max(1, Math.floor((16 * 2 ** 20) / block.length))
  const chunk = Buffer.concat(Array(repeat).fill(block))
  const fd = openSync(path, 'w')
  let written = 0
  while (written < bytes - 1) {
    const n = Math.min(chunk.length, bytes - 1 - written)
    writeSync(fd, chunk, 0, n)
    written += n
  }
  // The last line ends with `\n` too: grep tests complete lines only.
  writeSync(fd, '\n')
  closeSync(fd)
  return block.length
}

/** Polls `path` with readTaskOutput to the end: reads, bytes consumed, UTF-16 units returned. */
function pollNative(readTaskOutput, path, grep) {
  let offset = 0
  let reads = 0
  let units = 0
  let matched = 0
  for (;;) {
    const r = readTaskOutput(path, grep === undefined ? { offset, maxBytes: CFG.step } : { offset, maxBytes: CFG.step, grep })
    if ('error' in r) throw new Error(r.error)
    reads++
    units += r.text.length
    matched += r.matchedLines ?? 0
    if (r.nextOffset === offset) return { reads, bytes: offset, units, matched }
    offset = r.nextOffset
  }
}

// §2.14 steps 5–7 in JavaScript, the TypeScript core's regexes.
const OSC = /\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\|(?=[\x1b\n\r])|$)/g
const STRING = /\x1b[PX^_][^\x1b\n\r]*(?:\x1b\\|(?=\x1b)|$)/g
const CSI = /\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]/g
const ESCAPE = /\x1b[\x20-\x2f]+[\x30-\x7e]/g
const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f\x80-\x9f\u202a-\u202e\u2066-\u2069]/g
function sanitizeJs(text) {
  const cleaned = text.replace(OSC, '').replace(STRING, '').replace(CSI, '').replace(ESCAPE, '').replace(CONTROLS, '')
  if (!cleaned.includes('\r')) return cleaned
  return cleaned
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => {
      const frames = line.split('\r')
      for (let i = frames.length - 1; i >= 0; i--) if (frames[i] !== '') return frames[i]
      return ''
    })
    .join('\n')
}

/** The same windows read and sanitised in JavaScript (one fd, one Buffer). */
function pollJs(path) {
  const fd = openSync(path, 'r')
  const buffer = Buffer.allocUnsafe(CFG.step)
  const decoder = new TextDecoder('utf-8')
  let position = 0
  let reads = 0
  let units = 0
  let carry = ''
  for (;;) {
    const n = readSync(fd, buffer, 0, CFG.step, position)
    reads++
    if (n === 0) break
    position += n
    const text = carry + decoder.decode(buffer.subarray(0, n), { stream: true })
    const end = text.lastIndexOf('\n') + 1
    carry = text.slice(end)
    units += sanitizeJs(text.slice(0, end)).length
  }
  units += sanitizeJs(carry + decoder.decode()).length
  closeSync(fd)
  return { reads, bytes: position, units, matched: 0 }
}

const f2 = (n) => n.toFixed(2)
const gbps = (bytes, ms) => bytes / 1e9 / (ms / 1000)
const cpuMs = (usage) => (usage.user + usage.system) / 1000

/** Runs `run` and times it: wall and process CPU milliseconds. */
function timed(run) {
  const t = performance.now()
  const c = process.cpuUsage()
  const result = run()
  return { ...result, cpu: cpuMs(process.cpuUsage(c)), ms: performance.now() - t }
}

async function main() {
  const quiet = await waitForQuiet()
  const facts = machineFacts()
  const started = performance.now()
  const { readTaskOutput } = loadTaskstream()
  const dir = mkdtempSync(join(process.env.BENCH_TMPDIR || tmpdir(), 'taskstream-bench-read-output-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
  const path = join(dir, 'big.output')
  console.log(`taskstream readTaskOutput benchmark: ${binaryFacts()}`)
  console.log(`config: ${JSON.stringify(CFG)}; writing ${path}`)
  const blockBytes = writeOutputFile(path)

  const modes = {
    native: { label: `readTaskOutput, maxBytes ${CFG.step}`, run: () => pollNative(readTaskOutput, path) },
    grep: { label: `readTaskOutput, maxBytes ${CFG.step}, grep \`${GREP}\``, run: () => pollNative(readTaskOutput, path, GREP) },
    js: { label: `JavaScript: fs.readSync of ${CFG.step}-byte windows + TextDecoder + §2.14 regexes`, run: () => pollJs(path) },
  }
  // Warm-up (and the page cache): one pass of each.
  for (const mode of Object.values(modes)) mode.run()
  const R = Object.fromEntries(Object.keys(modes).map((k) => [k, []]))
  const disturbed = []
  for (let run = 1; run <= CFG.runs; run++) {
    for (const [name, mode] of Object.entries(modes)) {
      const r = await undisturbed(`${name} #${run}`, () => timed(mode.run))
      if (r.disturbed) disturbed.push(`${name} #${run}`)
      R[name].push(r.value)
      process.stderr.write(`  ${`${name} #${run}`.padEnd(10)} ${f2(gbps(r.value.bytes, r.value.ms))} GB/s wall, ${f2(gbps(r.value.bytes, r.value.cpu))} GB/s CPU (${r.value.reads} reads)\n`)
    }
  }
  for (const [name, runs] of Object.entries(R)) {
    for (const r of runs) if (r.bytes !== CFG.bytes) throw new Error(`${name} read ${r.bytes} bytes, not ${CFG.bytes}`)
  }
  if (R.native[0].units !== R.js[0].units) {
    throw new Error(`the native and the JavaScript texts differ in length: ${R.native[0].units} vs ${R.js[0].units} UTF-16 units`)
  }

  const medMs = (name) => median(R[name].map((r) => r.ms))
  const medCpu = (name) => median(R[name].map((r) => r.cpu))
  const speed = (name) => gbps(CFG.bytes, medMs(name))
  const cpuSpeed = (name) => gbps(CFG.bytes, medCpu(name))
  const rows = Object.entries(modes).map(([name, mode]) => [
    mode.label,
    f2(speed(name)),
    f2(cpuSpeed(name)),
    f2(medMs(name)),
    String(R[name][0].reads),
    f2((medMs(name) * 1000) / R[name][0].reads),
    `${f2(speed(name) / speed('js'))} / ${f2(cpuSpeed(name) / cpuSpeed('js'))}`,
  ])
  const verdict = (ok) => (ok ? 'met' : '**missed**')
  const goals = [
    [
      `readTaskOutput polls ≥ ${GOAL_GB_PER_S} GB/s in ${CFG.step}-byte steps (wall / CPU)`,
      `${f2(speed('native'))} / ${f2(cpuSpeed('native'))} GB/s`,
      verdict(speed('native') >= GOAL_GB_PER_S),
    ],
  ]

  // One shape a file, native only.
  const shapeRows = []
  for (const [name, shape] of Object.entries(SHAPES)) {
    const shapePath = join(dir, `${name}.output`)
    writeOutputFile(shapePath, shapeBlock(shape.line), CFG.shapeBytes)
    pollNative(readTaskOutput, shapePath)
    const r = await undisturbed(`shape ${name}`, () => timed(() => pollNative(readTaskOutput, shapePath)))
    if (r.disturbed) disturbed.push(`shape ${name}`)
    rmSync(shapePath)
    shapeRows.push([shape.label, f2(gbps(r.value.bytes, r.value.ms)), f2(gbps(r.value.bytes, r.value.cpu)), f2((r.value.ms * 1000) / r.value.reads)])
    process.stderr.write(`  shape ${name.padEnd(8)} ${f2(gbps(r.value.bytes, r.value.ms))} GB/s wall, ${f2(gbps(r.value.bytes, r.value.cpu))} GB/s CPU\n`)
  }

  const elapsed = ((performance.now() - started) / 1000).toFixed(0)
  const md = `## Reading what is new (\`bench/read-output.mjs\`)

${factsMarkdown(facts, {
    Binary: binaryFacts(),
    Config: `\`${JSON.stringify(CFG)}\``,
    'Wall time': `${elapsed} s`,
    'Machine before the run': quiet,
    'Runs measured next to a cargo/rustc build (†)': disturbed.length ? disturbed.join(', ') : 'none (runs that met one were measured again)',
  })}

A ${f2(CFG.bytes / 2 ** 30)} GiB output file (a ${blockBytes}-byte block of agent-style output repeated: plain log
lines, SGR-coloured lines, non-ASCII text, \`\\r\` progress redraws, an OSC title, CRLF, control
characters), in the page cache, polled from 0 to the end, each read at the previous
\`nextOffset\`. The JavaScript row reads the same windows with one fd and one Buffer, decodes
with a streaming TextDecoder, carries the unfinished line to the next window and applies the
§2.14 regexes; it returns the same ${R.js[0].units} UTF-16 units as readTaskOutput (which also opens
the file, checks it and makes a JS string on every call). ${R.grep[0].matched} lines matched the grep.
Median of ${CFG.runs} runs, interleaved.

${table(['reader', 'GB/s (wall)', 'GB/s (CPU)', 'ms per pass', 'reads', 'µs per read', '× the JS way (wall / CPU)'], rows)}

${table(['goal', 'measured', ''], goals, ['l', 'r', 'l'])}

Single-shape files of ${f2(CFG.shapeBytes / 2 ** 20)} MiB, polled the same way by readTaskOutput (one run each):

${table(['shape', 'GB/s (wall)', 'GB/s (CPU)', 'µs per read'], shapeRows)}

- per run, GB/s wall (CPU): ${Object.keys(modes)
    .map((name) => `${name} ${R[name].map((r) => `${f2(gbps(r.bytes, r.ms))} (${f2(gbps(r.bytes, r.cpu))})`).join(', ')}`)
    .join('; ')}
- Dense non-ASCII text is the slow shape: UTF-8 validation and the conversion to the UTF-16 that
  V8 takes without decoding cost more than the sanitising (V8's own UTF-8 decoder, which
  \`napi_create_string_utf8\` uses, runs at about 0.25 GB/s on such text here).
`
  console.log(md)
  const sizeVars = Object.keys(process.env).filter((n) => n.startsWith('BENCH_') && !['BENCH_WRITE', 'BENCH_TMPDIR'].includes(n))
  if (mayWriteResults(sizeVars)) {
    const written = writeSection('read-output', md)
    console.log(`(written to ${written})`)
  } else console.log('(non-default run: bench/RESULTS.md left alone; BENCH_WRITE=1 writes it anyway)')
}

await main()
