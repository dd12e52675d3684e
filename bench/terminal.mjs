// Terminal-mode benchmark, side by side with what a Node CLI
// does today: node-pty + @xterm/headless in JavaScript (Gemini CLI's
// approach), installed into bench/terminal-reference/ by this script only.
// Every measurement runs in a fresh Node process (`--worker <scenario> <impl>`).
//
//   firehose  `yes` under a terminal for BENCH_TERMINAL_SECONDS [3] s: JS-thread
//             CPU per MB (schedstat of the main thread) and ingest (MB/s).
//             taskstream: MonitorRegistry.start({ terminal: true }); reference:
//             pty.spawn + term.write(data) of every chunk. The pty's own
//             ceiling: bench/lib/pty-ceiling.c reading the same `yes` (C, no parsing).
//             BENCH_TERMINAL_ROUNDS [5] rounds, each ceiling → taskstream →
//             reference back to back; the table shows medians, and
//             "ingest / ceiling" is the median of each round's own ratio.
//   sixteen   16 terminal tasks at once (each a Node process redrawing a
//             progress bar every 10 ms and printing a line every 100 ms, 3 s): event-loop delay p99 above an
//             idle baseline, and RSS growth.
//   echo      `cat` under a terminal: write('x') → the x visible on the
//             screen (taskstream: screen().text; reference: the xterm buffer),
//             BENCH_TERMINAL_TRIALS [100] keystrokes, p50/p99.
//
// Results replace the `terminal` section of bench/RESULTS.md (default sizes only).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { binaryFacts, loadTaskstream } from './lib/binding.mjs'
import { threadSched } from './lib/probe.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, median, percentile, runningBuilds, table, waitForQuiet, writeSection } from './lib/report.mjs'
import { runWorker, spawnWorker } from './lib/worker.mjs'

const script = fileURLToPath(import.meta.url)
const referenceDir = join(dirname(script), 'terminal-reference')
const SECONDS = envInt('BENCH_TERMINAL_SECONDS', 3)
const TRIALS = envInt('BENCH_TERMINAL_TRIALS', 100)
const ROUNDS = envInt('BENCH_TERMINAL_ROUNDS', 5)
/** Terminal-mode ingest must reach this share of the pty's own ceiling, measured in the same run. */
const CEILING_GOAL = 0.9
/** taskstream's reading threads run at nice 15 (src/core/process/priority.rs). */
const READER_NICENESS = 15
const TASKS = 16
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const size = { cols: 120, rows: 40 }

function reference() {
  const require = createRequire(join(referenceDir, 'package.json'))
  return { pty: require('node-pty'), Terminal: require('@xterm/headless').Terminal }
}

/** One terminal task, either way: start(command) → { bytes(), screenText(), write(s), stop() }. */
function launcher(impl) {
  if (impl === 'taskstream') {
    const { MonitorRegistry } = loadTaskstream()
    const registry = new MonitorRegistry({ maxConcurrent: 64 })
    return (command) => {
      const m = registry.start({ command, terminal: size, idleTimeoutMs: 600_000 })
      return {
        bytes: () => m.bytesRead,
        screenText: () => registry.screen(m.id).text,
        write: (s) => registry.write(m.id, s),
        stop: () => registry.cancel(m.id, { notify: false }),
      }
    }
  }
  const { pty, Terminal } = reference()
  return (command) => {
    const term = new Terminal({ ...size, allowProposedApi: true })
    const p = pty.spawn('bash', ['-c', command], { ...size, env: { ...process.env, TERM: 'xterm-256color' } })
    let bytes = 0
    p.onData((d) => {
      bytes += Buffer.byteLength(d)
      term.write(d)
    })
    return {
      bytes: () => bytes,
      screenText: () => {
        const b = term.buffer.active
        const rows = []
        for (let i = 0; i < term.rows; i++) rows.push(b.getLine(b.viewportY + i)?.translateToString(true) ?? '')
        return rows.join('\n')
      },
      write: (s) => p.write(s),
      stop: () => p.kill('SIGKILL'),
    }
  }
}

async function firehose(impl) {
  if (impl === 'floor') return ptyFloor()
  if (impl === 'floor-nice') return ptyFloor(READER_NICENESS)
  const start = launcher(impl)
  const task = start('yes terminal-firehose-line-0123456789')
  await sleep(300)
  const [js0] = threadSched(process.pid)
  const b0 = task.bytes()
  const t0 = performance.now()
  await sleep(SECONDS * 1000)
  const [js1] = threadSched(process.pid)
  const seconds = (performance.now() - t0) / 1000
  const mb = (task.bytes() - b0) / 1e6
  task.stop()
  return { jsCpuMs: js1 - js0, mb, mbPerS: mb / seconds, jsMsPerMb: (js1 - js0) / mb }
}

/**
 * What the kernel's pseudo-terminal moves here to a reader that does nothing
 * but read: bench/lib/pty-ceiling.c (forkpty, 64 KiB reads of the master,
 * bytes discarded), built with the C compiler Rust links with, the same `yes`,
 * the same warm-up and duration. No terminal reader in any language can ingest
 * more than this.
 */
function ptyFloor(niceness) {
  const source = join(dirname(script), 'lib', 'pty-ceiling.c')
  const binary = join(dirname(script), '.build', 'pty-ceiling')
  mkdirSync(dirname(binary), { recursive: true })
  execFileSync('cc', ['-O2', '-o', binary, source, '-lutil'], { stdio: 'inherit' })
  const args = [String(SECONDS), 'yes terminal-firehose-line-0123456789', ...(niceness === undefined ? [] : [String(niceness)])]
  const out = execFileSync(binary, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  const [bytes, seconds] = String(out).trim().split(' ').map(Number)
  const mb = bytes / 1e6
  return { mb, mbPerS: mb / seconds }
}

async function eventLoop(windowMs, during) {
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  await during(windowMs)
  h.disable()
  return h.percentile(99) / 1e6
}

async function sixteen(impl) {
  const idle = await eventLoop(1000, (ms) => sleep(ms))
  const start = launcher(impl)
  const rss0 = process.memoryUsage().rss
  // One Node process per task drawing a progress bar every 10 ms and a line every 100 ms, so the
  // producers themselves fork nothing (a shell loop of `sleep`/`printf` would spend both cores
  // on forks and measure the machine, not the reader).
  const producer =
    "let i=0;const t=setInterval(()=>{i++;process.stdout.write('\\r['+'#'.repeat(i%30).padEnd(30)+'] '+i+'%');" +
    "if(i%10===0)process.stdout.write('\\nline '+i+'\\n');if(i>=600)clearInterval(t)},10)"
  const command = `${JSON.stringify(process.execPath)} -e ${JSON.stringify(producer)}`
  const tasks = Array.from({ length: TASKS }, () => start(command))
  // The 16 producers' own start-up (a Node boot each) is not the readers' cost.
  await sleep(1000)
  let rssPeak = rss0
  const busy = await eventLoop(SECONDS * 1000, async (ms) => {
    const t = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 50)
    await sleep(ms)
    clearInterval(t)
  })
  for (const t of tasks) t.stop()
  return { idleP99: idle, busyP99: busy, rssGrowthMiB: (rssPeak - rss0) / 2 ** 20 }
}

async function echo(impl) {
  const start = launcher(impl)
  const task = start('cat')
  await sleep(300)
  const samples = []
  for (let i = 1; i <= TRIALS; i++) {
    const want = 'x'.repeat(i)
    const t0 = performance.now()
    task.write('x')
    while (!task.screenText().includes(want)) {
      await new Promise((r) => setImmediate(r))
      if (performance.now() - t0 > 5000) throw new Error(`keystroke ${i} never showed`)
    }
    samples.push(performance.now() - t0)
  }
  task.stop()
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) }
}

const SCENARIOS = { firehose, sixteen, echo }

if (process.argv[2] === '--worker') {
  await runWorker(SCENARIOS[process.argv[3]], process.argv[4])
} else {
  if (!existsSync(join(referenceDir, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node'))) {
    console.log('== installing the reference (node-pty, @xterm/headless) into bench/terminal-reference')
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--foreground-scripts'], { cwd: referenceDir, stdio: 'inherit' })
  }
  const quiet = await waitForQuiet()
  const facts = machineFacts()
  const run = async (scenario) => ({
    ours: await spawnWorker(script, scenario, 'taskstream'),
    ref: await spawnWorker(script, scenario, 'reference'),
  })
  // Rounds of ceiling → taskstream → reference, back to back, so that each
  // round's ratio compares readers that met the same machine.
  const rounds = []
  for (let i = 0; i < ROUNDS; i++) {
    const floor = await spawnWorker(script, 'firehose', 'floor')
    const ours = await spawnWorker(script, 'firehose', 'taskstream')
    const floorNice = await spawnWorker(script, 'firehose', 'floor-nice')
    const ref = await spawnWorker(script, 'firehose', 'reference')
    rounds.push({ floor, ours, floorNice, ref })
    process.stderr.write(
      `  firehose round ${i + 1}: ceiling ${floor.mbPerS.toFixed(1)}, taskstream ${ours.mbPerS.toFixed(1)}, ceiling at nice ${READER_NICENESS} ${floorNice.mbPerS.toFixed(1)}, reference ${ref.mbPerS.toFixed(1)} MB/s\n`,
    )
  }
  const medianOf = (side, key) => median(rounds.map((r) => r[side][key]))
  const fire = {
    ours: { jsMsPerMb: medianOf('ours', 'jsMsPerMb'), mbPerS: medianOf('ours', 'mbPerS') },
    ref: { jsMsPerMb: medianOf('ref', 'jsMsPerMb'), mbPerS: medianOf('ref', 'mbPerS') },
    floor: { mbPerS: medianOf('floor', 'mbPerS') },
    floorNice: { mbPerS: medianOf('floorNice', 'mbPerS') },
  }
  const ofNiceCeiling = median(rounds.map((r) => r.ours.mbPerS / r.floorNice.mbPerS))
  const ofCeiling = median(rounds.map((r) => r.ours.mbPerS / r.floor.mbPerS))
  const many = await run('sixteen')
  const keys = await run('echo')
  const ratio = (a, b) => `${(a / b).toFixed(2)}×`
  const md = [
    '## Terminal mode (bench/terminal.mjs)',
    '',
    factsMarkdown(facts, {
      Binary: binaryFacts(),
      Reference: 'node-pty 1.1.0 + @xterm/headless 6.0.0 in the same Node process',
      'Machine before the run': quiet,
      'cargo/rustc running at the end': String(runningBuilds().length),
    }),
    '',
    `### A terminal firehose (\`yes\` under a terminal, ${SECONDS} s, medians of ${ROUNDS} rounds)`,
    '',
    table(
      ['', 'taskstream', 'node-pty + @xterm/headless', 'ratio'],
      [
        ['JS-thread CPU per MB', `${fire.ours.jsMsPerMb.toFixed(3)} ms`, `${fire.ref.jsMsPerMb.toFixed(3)} ms`, ratio(fire.ours.jsMsPerMb, fire.ref.jsMsPerMb)],
        ['ingest', `${fire.ours.mbPerS.toFixed(1)} MB/s`, `${fire.ref.mbPerS.toFixed(1)} MB/s`, ratio(fire.ours.mbPerS, fire.ref.mbPerS)],
        ['the pty\'s own ceiling (`bench/lib/pty-ceiling.c`: a C reader of the master, 64 KiB reads, no parsing)', `${fire.floor.mbPerS.toFixed(1)} MB/s`, '', ''],
        ['**ingest / ceiling** (median of the rounds\' own ratios)', `**${(ofCeiling * 100).toFixed(0)} %**`, `${(median(rounds.map((r) => r.ref.mbPerS / r.floor.mbPerS)) * 100).toFixed(0)} %`, ''],
        [`the same C reader at nice ${READER_NICENESS}, the niceness of taskstream's reading threads (the command at the default priority)`, `${fire.floorNice.mbPerS.toFixed(1)} MB/s`, '', ''],
        [`ingest / that ceiling`, `${(ofNiceCeiling * 100).toFixed(0)} %`, '', ''],
      ],
    ),
    '',
    `Goal: terminal-mode ingest ≥ ${(CEILING_GOAL * 100).toFixed(0)} % of the pty's own ceiling in the same run: ${ofCeiling >= CEILING_GOAL ? 'met' : '**missed**'} (${(ofCeiling * 100).toFixed(1)} %).`,
    '',
    `Per round, measured in this order (ceiling / taskstream / ceiling at nice ${READER_NICENESS} / reference MB/s; taskstream's share of the ceiling): ${rounds
      .map(
        (r) =>
          `${r.floor.mbPerS.toFixed(1)} / ${r.ours.mbPerS.toFixed(1)} / ${r.floorNice.mbPerS.toFixed(1)} / ${r.ref.mbPerS.toFixed(1)} (${((r.ours.mbPerS / r.floor.mbPerS) * 100).toFixed(0)} %)`,
      )
      .join('; ')}.`,
    '',
    `### ${TASKS} terminal tasks at once (a progress bar redrawn every 10 ms and a line every 100 ms each)`,
    '',
    table(
      ['', 'taskstream', 'node-pty + @xterm/headless'],
      [
        ['event-loop p99 idle', `${many.ours.idleP99.toFixed(2)} ms`, `${many.ref.idleP99.toFixed(2)} ms`],
        ['event-loop p99 with the tasks', `${many.ours.busyP99.toFixed(2)} ms`, `${many.ref.busyP99.toFixed(2)} ms`],
        ['RSS growth', `${many.ours.rssGrowthMiB.toFixed(1)} MiB`, `${many.ref.rssGrowthMiB.toFixed(1)} MiB`],
      ],
    ),
    '',
    `### Keystroke echo (\`cat\` under a terminal, ${TRIALS} keystrokes): write('x') → visible on the screen`,
    '',
    table(
      ['', 'taskstream (`screen()`)', 'node-pty + @xterm/headless (buffer)'],
      [
        ['p50', `${keys.ours.p50.toFixed(2)} ms`, `${keys.ref.p50.toFixed(2)} ms`],
        ['p99', `${keys.ours.p99.toFixed(2)} ms`, `${keys.ref.p99.toFixed(2)} ms`],
      ],
    ),
  ].join('\n')
  console.log(md)
  if (mayWriteResults(['BENCH_TERMINAL_SECONDS', 'BENCH_TERMINAL_TRIALS', 'BENCH_TERMINAL_ROUNDS'])) console.log(`\nwrote ${writeSection('terminal', md)}`)
}
