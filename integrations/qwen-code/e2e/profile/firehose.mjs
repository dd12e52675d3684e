// One firehose run (e2e/scenarios.mjs) with the CLI's CPU by thread and a CPU profile of the main
// thread of each of the CLI's node processes; prints the run, then the functions with the most
// samples inside the measured window (V8's timestamps and process.hrtime share the monotonic clock).
//   node integrations/qwen-code/e2e/profile/firehose.mjs [stock|integrated] [--cold] [--bytes N]
// For what the other threads do, run `perf record -g -p <cli pid>` beside it (V8's background
// compilation showed up that way).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { patch } from '../../lib/patcher.mjs'
import { firehoseScenario } from '../scenarios.mjs'
import { requireInstalledQwen } from '../support.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
const which = args.includes('stock') ? 'stock' : 'integrated'
const bytes = args.includes('--bytes') ? Number(args[args.indexOf('--bytes') + 1]) : 200_000_000
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tsq-profile-'))
const profDir = path.join(root, 'profiles')
fs.mkdirSync(profDir)
let dir = requireInstalledQwen()
if (which === 'integrated') {
  dir = path.join(root, 'node_modules', '@qwen-code', 'qwen-code')
  fs.cpSync(requireInstalledQwen(), dir, { recursive: true, verbatimSymlinks: true })
  patch(dir)
}
const env = { NODE_OPTIONS: `--require ${path.join(here, 'preload.cjs')}`, TSQ_PROF_DIR: profDir }
const r = await firehoseScenario({ qwenDir: dir, env, bytes, warm: !args.includes('--cold') })
console.log(JSON.stringify({ which, ...r }, null, 1))
const [from, to] = r.windowMonotonicMs
for (const file of fs.readdirSync(profDir)) {
  const p = JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8'))
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map()
  let t = p.startTime
  let n = 0
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]
    if (t / 1000 < from || t / 1000 > to) continue
    const f = byId.get(p.samples[i]).callFrame
    const key = `${f.functionName || '(anonymous)'} ${path.basename(f.url)}:${f.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + 1)
    n++
  }
  if (!n) continue
  console.log(`\n${file}: ${n} samples in the window (${(to - from).toFixed(0)} ms)`)
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${((100 * v) / n).toFixed(1)}%  ${k}`)
}
console.log(`\n(profiles: ${profDir})`)
