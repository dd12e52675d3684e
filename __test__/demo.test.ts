// `npm run demo` is the project's showcase: run examples/demo.mjs as a child
// process and check it still tells its whole story, so it cannot silently rot.
// (No timing assertions: the 30 s timeout only guards against a hang.)
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import { isAlive } from './support/process'

const root = join(__dirname, '..')

describe('examples/demo.mjs', () => {
  it('runs to completion and prints every kind of notification and the /tasks table', () => {
    const run = spawnSync(process.execPath, [join(root, 'examples', 'demo.mjs')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
      killSignal: 'SIGKILL',
    })
    const output = `${run.stdout}\n${run.stderr}`
    expect(run.error, output).toBeUndefined()
    expect(run.signal, output).toBeNull()
    expect(run.status, output).toBe(0)

    // Guards shown before anything starts.
    expect(run.stdout).toContain('Blocked: standalone sleep 30.')
    expect(run.stdout).toContain('Monitor commands must not contain non-final top-level background operators.')
    // The noisy log producer: throttled burst, then failed with its exit code.
    expect(run.stdout).toMatch(/Monitor "api service logs" failed\. \(\d+ events, \d+ lines dropped due to throttling\)/)
    // Its result: the exit, then (the recommended signal setting) what rode in with it and
    // the template digest of what was not shown.
    expect(run.stdout).toMatch(/<result>Exit code 3(\n[^<]*)?<\/result>/)
    // The silent command stops at its idle timeout.
    expect(run.stdout).toContain('Monitor "wait for build output" completed. (0 events)')
    expect(run.stdout).toContain('<result>Idle timeout</result>')
    // The dev server came up and was cancelled by the demo.
    expect(run.stdout).toMatch(/Monitor "dev server" event #\d+: ready on http:\/\/localhost:\d+/)
    expect(run.stdout).toMatch(/Monitor "dev server" was cancelled\. \(\d+ events\)/)
    // waitFor on the ready line, a settled notification, who ended what.
    expect(run.stdout).toMatch(/waitFor resolved: \{"reason":"match","line":"ready on http:\/\/localhost:\d+","status":"running"/)
    expect(run.stdout).toContain('Monitor "dev server" output settled: no output for 400 ms.')
    // The same server found by the port it listens on (Linux), the one its ready line names.
    if (process.platform === 'linux') {
      const readyPort = /ready on http:\/\/localhost:(\d+)/.exec(run.stdout)?.[1]
      expect(run.stdout).toContain(`resolved: {"reason":"port","port":${readyPort},"status":"running"`)
      expect(run.stdout).toContain(`entry.ports: [${readyPort}]`)
    }
    expect(run.stdout).toContain('meta.end: {"reason":"exited","by":"process","exitCode":3}')
    expect(run.stdout).toContain('meta.end: {"reason":"idle-timeout","by":"limit"}')
    // Section 5: a leaking test under limits (API.md §6.8) fails at its memory limit.
    expect(run.stdout).toContain('restarted mon_')
    expect(run.stdout).toMatch(/restarted mon_\w+: the old run ended \{"reason":"restarted","by":"caller","via":"restart"\}/)
    expect(run.stdout).toMatch(/Monitor "test watcher" event #2: test watcher up, pid \d+/)
    expect(run.stdout).toContain('the new run is up (match); events so far: 2')
    expect(run.stdout).toMatch(/leaky test ended: \{"reason":"limit","by":"limit","detail":"Memory limit of 134217728 bytes reached","limit":"memory"\}; usage: \{"cpuMs":\d+,"peakMemoryBytes":\d+\}/)
    expect(run.stdout).toContain('dev server: ')
    expect(run.stdout).toMatch(/dev server: .*ended by caller \(cancelled, via cancel\)/)
    // The recommended signal setting: the failed request inside the burst reaches the model
    // (in a window, or with the terminal notification), and what was dropped is summarised by
    // template.
    expect(run.stdout).toMatch(/Monitor "api service logs" (events? #\d+(–\d+)?( \(\+\d+ more\))?( \[\d+ not shown\])?: |failed\. .*\n *)\[api\] ERROR GET \/api\/items\/97 500/)
    expect(run.stdout).toMatch(/\[\d+ lines not shown: \d+× \[api\] INFO  GET \/api\/items\/# # #/)
    // Terminal mode: the prompt read from the screen, answered, the settled screen.
    expect(run.stdout).toContain('agent reads registry.screen(): "setup: checking environment... ok\\nInstall 3 packages into ./vendor? [y/N]"')
    expect(run.stdout).toContain('Monitor "installer" event #2: Install 3 packages into ./vendor? [y/N] y')
    expect(run.stdout).toContain('Monitor "installer" event #3: installing [##########] 100%')
    expect(run.stdout).toContain('Monitor "installer" output settled: no output for 400 ms.')
    expect(run.stdout).toMatch(/<result>setup: checking environment\.\.\. ok\n *Install 3 packages into \.\/vendor\? \[y\/N\] y\n *installing \[##########\] 100%\n *setup: done, 3 packages installed<\/result>/)
    // The /tasks table in the CLI's format (CONTRACT.md §2.17).
    expect(run.stdout).toContain('Background tasks (3 total)')
    expect(run.stdout).toMatch(/^ *\[mon_[0-9a-f]{16}\] failed: Exit code 3 \(\d+ events\)  \S+ pid=\d+  api service logs$/m)
    expect(run.stdout).toMatch(/^ *\[mon_[0-9a-f]{16}\] completed \(Idle timeout, 0 events\)  \S+ pid=\d+  wait for build output$/m)
    expect(run.stdout).toMatch(/^ *\[mon_[0-9a-f]{16}\] cancelled \(\d+ events?\)  \S+ pid=\d+  dev server$/m)
    // A dev server that survives a CLI restart: session 1 is SIGKILLed, the server answers with
    // no host, session 2 recovers it under its original id, digests the missed lines, stops it.
    const id = /session 1 \(pid \d+\): Monitor started: dev server \(persisted\) \((mon_[0-9a-f]{16})\); ready on http:\/\/localhost:\d+/.exec(run.stdout)?.[1]
    expect(id, run.stdout).toBeDefined()
    expect(run.stdout).toMatch(/the CLI crashes: kill -9 \d+\n.*session 1 ended by SIGKILL; no taskstream host is running now/)
    expect(run.stdout).toMatch(/\/pid -> 200: the server \(pid \d+\) still answers, with no host/)
    expect(run.stdout).toContain(`recover() -> adopted: ["${id}"], settled: [], lost: [], corrupt: 0, busy: []`)
    expect(run.stdout).toContain(`recovered ${id}: same id, command "node ./examples/fixtures/dev-server.mjs"`)
    expect(run.stdout).toMatch(new RegExp(`^ *\\[${id}\\] running \\(1 event\\)  \\S+ pid=\\d+  dev server \\(persisted\\)$`, 'm'))
    expect(run.stdout).toContain('Monitor "dev server (persisted)" event #1: 3 lines were written while no host was attached (counted, not replayed)')
    expect(run.stdout).toContain('[3 lines dropped since the last notification; first: GET /pid 200; last: GET /health 200]')
    expect(run.stdout).toContain('Monitor "dev server (persisted)" event #2: GET /after-restart 200')
    expect(run.stdout).toContain('Monitor "dev server (persisted)" was cancelled. (2 events)')
    expect(run.stdout).toMatch(new RegExp(`^ *\\[${id}\\] cancelled \\(2 events\\)  \\S+ pid=\\d+  dev server \\(persisted\\)$`, 'm'))
    const gone = /no process survives: dev server pid ([\d, ]+) and keeper pid (\d+) are gone, no process carries the task's tag; http:\/\/localhost:\d+\/pid -> ECONNREFUSED/.exec(run.stdout)
    expect(gone, run.stdout).not.toBeNull()
    // Checked here too, after the demo exited: neither the server nor its keeper runs.
    for (const pid of [...gone![1].split(', '), gone![2]].map(Number)) expect(isAlive(pid), `pid ${pid}`).toBe(false)
    expect(run.stderr).toBe('')
  }, 40_000)
})
