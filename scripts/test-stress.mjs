// `npm run test:stress [-- RUNS]`: runs the whole `npm test` RUNS times in a row (default 20)
// while a CPU hog keeps every core busy (one `yes > /dev/null` per core, at the tests' own
// priority), and stops at the first failure. A test that depends on the scheduler or on timing
// fails here long before it fails for a user.
//
// Each run's output goes to target/stress/run-<n>.log; a failing run's log is kept and its last
// lines are printed. Every child runs through scripts/lib/run.mjs (a time limit, its tree killed
// on a timeout); the hogs are killed when this script ends, however it ends.
//
// Environment: STRESS_HOGS (number of hog processes, default: the number of cores),
// STRESS_RUN_MINUTES (time limit of one `npm test`, default 30).
import { spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { main, MIN, run } from './lib/run.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const runs = Number(process.argv[2] ?? process.env.STRESS_RUNS ?? 20)
const hogCount = Number(process.env.STRESS_HOGS ?? availableParallelism())
const runLimit = Number(process.env.STRESS_RUN_MINUTES ?? 30) * MIN
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(hogCount) || hogCount < 0) {
  console.error('usage: npm run test:stress [-- RUNS]   (STRESS_HOGS=<n> hog processes)')
  process.exit(2)
}

const logs = join(root, 'target', 'stress')
rmSync(logs, { recursive: true, force: true })
mkdirSync(logs, { recursive: true })

/** The hogs: `yes` into /dev/null, in this script's process group (a kill of the group that
 * runs this script ends them too), killed on the way out. */
const hogs = []
function startHogs() {
  const devNull = openSync('/dev/null', 'w')
  for (let i = 0; i < hogCount; i++) {
    const hog = spawn('yes', [], { stdio: ['ignore', devNull, 'ignore'] })
    hog.on('error', (error) => {
      console.error(`stress: could not start a CPU hog (yes): ${error.message}`)
      process.exit(1)
    })
    hogs.push(hog)
  }
  closeSync(devNull)
}
function stopHogs() {
  for (const hog of hogs.splice(0)) {
    hog.kill('SIGKILL')
  }
}
process.on('exit', stopHogs)

const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`

await main(async () => {
  startHogs()
  console.log(`stress: npm test ${runs} times, ${hogs.length} CPU hog(s) (yes > /dev/null) on ${availableParallelism()} core(s); logs in ${logs}`)
  const started = Date.now()
  let passed = 0
  for (let n = 1; n <= runs; n++) {
    const log = join(logs, `run-${n}.log`)
    const fd = openSync(log, 'w')
    let result
    let failure = null
    try {
      result = await run(`npm test (stress run ${n}/${runs})`, 'npm', ['test'], {
        cwd: root,
        stdio: ['ignore', fd, fd],
        timeoutMs: runLimit,
        check: false,
      })
      if (result.status !== 0) failure = `exit ${result.status ?? result.signal}`
    } catch (error) {
      failure = error.message
    } finally {
      closeSync(fd)
    }
    if (failure) {
      const lines = readFileSync(log, 'utf8').split('\n')
      const failing = lines.filter((l) => /panicked at|FAILED|FAIL |✗|×|AssertionError|Error:/.test(l)).slice(0, 40)
      console.log(`---- run ${n}: failing lines`)
      console.log(failing.join('\n'))
      console.log(`---- run ${n}: last 120 lines of ${log}`)
      console.log(lines.slice(-120).join('\n'))
      console.log(`stress: run ${n} of ${runs} FAILED (${failure}); ${passed} passed before it (${seconds(Date.now() - started)} in all)`)
      console.log(`${passed} passed, 1 failed`)
      process.exit(1)
    }
    passed++
    rmSync(log)
    console.log(`stress: run ${n}/${runs} passed (${seconds(result.ms)})`)
  }
  console.log(`stress: all ${runs} runs of npm test passed under ${hogs.length} CPU hog(s) (${seconds(Date.now() - started)} in all)`)
  console.log(`${passed} passed, 0 failed`)
  // The hogs' handles would keep this script alive after the last run.
  stopHogs()
})
