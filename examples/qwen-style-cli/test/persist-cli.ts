// CLI process 1 of test/persist.test.ts: a CLI with `persist` that starts, through its tools, a
// background shell and a monitor (both scripts/server.sh: a server with a helper process beside
// it) and a build that waits for a file `go` and then fails, waits for the servers' ready lines
// with wait_for, prints `{ ids, startTimes }` as one JSON line, and idles until
// the test kills it.
//
//   vite-node test/persist-cli.ts <projectDir> <projectTempDir> <stateDir> <leaseMs>
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { createCli } from '../src/cli.js'

const [targetDir, projectTempDir, stateDir, leaseArg] = process.argv.slice(2)
if (!targetDir || !projectTempDir || !stateDir) throw new Error('usage: persist-cli.ts <projectDir> <projectTempDir> <stateDir> <leaseMs>')
// Tasks do not hold Node's loop: this timer keeps the CLI alive until it is killed.
const alive = setInterval(() => {}, 1000)

const cli = createCli({ targetDir, projectTempDir, conversationId: 'conv-1', persist: { stateDir, leaseMs: Number(leaseArg) } })
const turn = { signal: new AbortController().signal }
const idOf = (llmContent: string) => {
  const id = /^id: (\S+)$/m.exec(llmContent)?.[1]
  if (!id) throw new Error(`no id in ${JSON.stringify(llmContent)}`)
  return id
}

const shell = cli.shellTool.execute({ command: 'bash scripts/server.sh api', is_background: true }, { ...turn, callId: 'call_1' })
const monitor = cli.monitorTool.execute(
  { command: 'bash scripts/server.sh web', description: 'web server', idle_timeout_ms: 600_000 },
  { ...turn, callId: 'call_2' },
)
const build = cli.shellTool.execute(
  { command: 'echo building; while [ ! -e go ]; do sleep 0.05; done; echo "build failed"; exit 3', is_background: true },
  { ...turn, callId: 'call_3' },
)
const ids = { shell: idOf(shell.llmContent), monitor: idOf(monitor.llmContent), build: idOf(build.llmContent) }
// A wait sees lines from its call on: set both up, then let the servers go.
const waits = [ids.shell, ids.monitor].map((id) => cli.waitForTool.execute({ task_id: id, pattern: 'ready', timeout_ms: 10_000 }, { ...turn, callId: 'call_4' }))
for (const name of ['api', 'web']) writeFileSync(join(targetDir, `${name}.go`), '')
for (const waited of await Promise.all(waits)) {
  if (!waited.llmContent.includes('printed a matching line')) throw new Error(waited.llmContent)
}
const startTimes = {
  shell: cli.context.shells.get(ids.shell)!.startTime,
  monitor: cli.context.monitors.get(ids.monitor)!.startTime,
}
process.stdout.write(`${JSON.stringify({ ids, startTimes })}\n`)
void alive
