// Soak benchmark: short tasks in sequence, 50 at a time, with a forced GC
// before each sample (the loop is __test__/fixtures/soak.js, run in a fresh
// `node --expose-gc` per kind, with the bench binary):
//   shells    executeBackground({ command: 'true' }), awaiting `done` and a waitFor
//   monitors  MonitorRegistry.start({ command: 'true' }) + waitFor (exit)
//   terminal  the same with terminal: true
// Goal (background shells): after a GC, the heap and RSS at 100,000 shells
// are within 5 MiB of their values at 10,000. V8's new space is pinned at
// 1 MiB (--max-semi-space-size=1): otherwise V8 grows and shrinks it by up to
// 15 MiB between samples (heapTotal 4.5 -> 19.7 -> 4.5 MiB seen), and RSS
// would follow V8's sizing rather than what the tasks leave behind.
//
//   BENCH_SOAK_SHELLS [100000], BENCH_SOAK_MONITORS [40000],
//   BENCH_SOAK_TERMINAL [20000]: tasks per kind (0 skips a kind; sampled
//   every tenth); BENCH_BINARY=<path> picks the binary. Only a default run
//   replaces the soak section of bench/RESULTS.md (BENCH_WRITE=1 forces it).
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { binaryFacts, binaryPath } from './lib/binding.mjs'
import { envInt, factsMarkdown, machineFacts, mayWriteResults, table, writeSection } from './lib/report.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const fixture = join(root, '__test__', 'fixtures', 'soak.js')
/** A task count: envInt, except that 0 skips the kind. */
const count = (name, def) => (process.env[name] === '0' ? 0 : envInt(name, def))
const sizes = {
  shells: count('BENCH_SOAK_SHELLS', 100_000),
  monitors: count('BENCH_SOAK_MONITORS', 40_000),
  terminal: count('BENCH_SOAK_TERMINAL', 20_000),
}

/** One kind in a fresh Node (killed with its tasks after an hour). */
function soak(kind, total) {
  const every = Math.max(50, Math.round(total / 10 / 50) * 50)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--max-semi-space-size=1', fixture, kind, String(total), String(every)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: binaryPath },
    })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const lines = out.split('\n')
      out = lines.pop()
      for (const line of lines) {
        const s = JSON.parse(line)
        samples.push(s)
        console.log(`${kind} ${s.tasks}: heap ${s.heapMiB.toFixed(2)} MiB, RSS ${s.rssMiB.toFixed(1)} MiB, ${s.seconds.toFixed(0)} s`)
      }
    })
    const samples = []
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_600_000)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve(samples)
      else reject(new Error(`soak ${kind} ended with ${code ?? signal}`))
    })
  })
}

const facts = machineFacts()
const rows = []
const notes = []
for (const [kind, total] of Object.entries(sizes)) {
  if (total === 0) continue
  const samples = await soak(kind, total)
  const first = samples[0]
  const last = samples[samples.length - 1]
  const heap = last.heapMiB - first.heapMiB
  const rss = last.rssMiB - first.rssMiB
  rows.push([
    kind,
    `${first.tasks} → ${last.tasks}`,
    `${first.heapMiB.toFixed(2)} → ${last.heapMiB.toFixed(2)} (${heap >= 0 ? '+' : ''}${heap.toFixed(2)})`,
    `${first.rssMiB.toFixed(1)} → ${last.rssMiB.toFixed(1)} (${rss >= 0 ? '+' : ''}${rss.toFixed(1)})`,
    Math.abs(heap) <= 5 && Math.abs(rss) <= 5 ? 'yes' : 'no',
    ((last.seconds * 1000) / last.tasks).toFixed(2),
  ])
  notes.push(`- ${kind}: ${samples.map((s) => `${s.tasks}: ${s.heapMiB.toFixed(2)}/${s.heapTotalMiB.toFixed(1)}/${s.rssMiB.toFixed(0)}`).join(', ')} (heap used/heap total/RSS MiB)`)
}

const markdown = `## Soak (\`bench/soak.mjs\`)

${factsMarkdown(facts, { Binary: binaryFacts() })}

Short tasks (\`true\`) in sequence, 50 at a time, each awaited with a \`waitFor\` (shells also with \`done\`); a forced GC
before each sample; V8's new space pinned at 1 MiB (\`--max-semi-space-size=1\`) so that RSS does not follow V8's own
new-space resizing (up to 15 MiB between samples otherwise). "Within 5 MiB" compares the last sample with the first (the goal: 100,000 shells against 10,000).

${table(['kind', 'tasks', 'heap MiB', 'RSS MiB', 'within 5 MiB', 'ms per task'], rows, ['l', 'l', 'l', 'l', 'l', 'r'])}

Every sample:
${notes.join('\n')}
`
console.log(markdown)
if (mayWriteResults(['BENCH_SOAK_SHELLS', 'BENCH_SOAK_MONITORS', 'BENCH_SOAK_TERMINAL'])) console.log(`wrote ${writeSection('soak', markdown)}`)
