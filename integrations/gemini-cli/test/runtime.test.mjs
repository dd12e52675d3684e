// The runtime's pure helpers, without the CLI.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'

import { addMonitorUpdates, duration, envDelta, formatMonitorUpdate, persistOptions, readOutput, startError, tailLines, takeMonitorUpdates, taskControlOptions } from '../runtime/runtime.mjs'

const svc = { getLogDir: () => '/home/u/.gemini/tmp/background-processes' }

test('persistOptions: off unless TASKSTREAM_GEMINI_PERSIST=1; the lease from TASKSTREAM_GEMINI_PERSIST_LEASE', () => {
  if (process.platform === 'win32') return
  assert.equal(persistOptions(svc, {}), undefined)
  assert.equal(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '0' }), undefined)
  const stateDir = '/home/u/.gemini/tmp/background-processes/taskstream/state'
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '1' }), { stateDir })
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: 'true', TASKSTREAM_GEMINI_PERSIST_LEASE: '30m' }), { stateDir, leaseMs: 1_800_000 })
  // Out of range or not a duration: the default lease, and a warning (not a silent value).
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '1', TASKSTREAM_GEMINI_PERSIST_LEASE: '10ms' }), { stateDir })
  assert.deepEqual(persistOptions(svc, { TASKSTREAM_GEMINI_PERSIST: '1', TASKSTREAM_GEMINI_PERSIST_LEASE: 'soon' }), { stateDir })
})

/** Calls `fn` with process.stderr.write captured; returns [its result, what it wrote]. */
function withStderr(fn) {
  const write = process.stderr.write
  let written = ''
  process.stderr.write = (chunk) => {
    written += chunk
    return true
  }
  try {
    return [fn(), written]
  } finally {
    process.stderr.write = write
  }
}

test('taskControlOptions: limits and a deadline from TASKSTREAM_GEMINI_*, off unless set (the parsing taskstream-qwen shares)', () => {
  assert.deepEqual(taskControlOptions({}), {})
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '', TASKSTREAM_QWEN_TIMEOUT: '5s' }), {}, "empty, or another CLI's variable: off")
  assert.deepEqual(
    taskControlOptions({
      TASKSTREAM_GEMINI_MEMORY_LIMIT: '2G',
      TASKSTREAM_GEMINI_CPU_PERCENT: '150',
      TASKSTREAM_GEMINI_MAX_PROCESSES: '512',
      TASKSTREAM_GEMINI_TIMEOUT: '30m',
    }),
    { limits: { memoryBytes: 2 * 1024 ** 3, cpuPercent: 150, maxProcesses: 512 }, timeoutMs: 1_800_000 },
  )
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_MEMORY_LIMIT: '1.5g' }), { limits: { memoryBytes: 1.5 * 1024 ** 3 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_MEMORY_LIMIT: '64M' }), { limits: { memoryBytes: 64 * 1024 ** 2 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '1500' }), { timeoutMs: 1500 })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '90s' }), { timeoutMs: 90_000 })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '2h' }), { timeoutMs: 7_200_000 })
  // Not a positive whole amount: ignored with one line on stderr (once per value), the rest applies.
  const env = { TASKSTREAM_GEMINI_MEMORY_LIMIT: 'lots', TASKSTREAM_GEMINI_CPU_PERCENT: '0', TASKSTREAM_GEMINI_MAX_PROCESSES: '64', TASKSTREAM_GEMINI_TIMEOUT: '0.5' }
  const [options, stderr] = withStderr(() => taskControlOptions(env))
  assert.deepEqual(options, { limits: { maxProcesses: 64 } })
  assert.equal(
    stderr,
    'taskstream-gemini: ignoring TASKSTREAM_GEMINI_MEMORY_LIMIT="lots": not a positive whole amount\n' +
      'taskstream-gemini: ignoring TASKSTREAM_GEMINI_CPU_PERCENT="0": not a positive whole amount\n' +
      'taskstream-gemini: ignoring TASKSTREAM_GEMINI_TIMEOUT="0.5": not a positive whole amount\n',
  )
  assert.deepEqual(withStderr(() => taskControlOptions(env)), [{ limits: { maxProcesses: 64 } }, ''], 'said once')
  assert.deepEqual(withStderr(() => taskControlOptions({ TASKSTREAM_GEMINI_TIMEOUT: '5 weeks' })), [{}, 'taskstream-gemini: ignoring TASKSTREAM_GEMINI_TIMEOUT="5 weeks": not a positive whole amount\n'])
})

test("startError: taskstream's refusal, with the variable behind it named", () => {
  const env = { TASKSTREAM_GEMINI_MEMORY_LIMIT: '1', TASKSTREAM_GEMINI_MAX_PROCESSES: '8', TASKSTREAM_GEMINI_TIMEOUT: '30m' }
  const range = new RangeError('The value of "options.limits.memoryBytes" is out of range. It must be an integer >= 1048576 && <= 9007199254740991. Received 1')
  assert.equal(startError(range, env), `${range.message} (TASKSTREAM_GEMINI_MEMORY_LIMIT=1)`)
  const host = new Error('limits cannot be enforced on this host: no writable cgroup')
  assert.equal(startError(host, env), `${host.message} (TASKSTREAM_GEMINI_MEMORY_LIMIT=1, TASKSTREAM_GEMINI_MAX_PROCESSES=8)`)
  const persisted = new TypeError('The "options.timeoutMs" option cannot be used with "options.persist": a persisted task outlives the host that keeps the deadline')
  assert.equal(startError(persisted, { ...env, TASKSTREAM_GEMINI_PERSIST: '1' }), `${persisted.message} (TASKSTREAM_GEMINI_TIMEOUT=30m) (TASKSTREAM_GEMINI_PERSIST=1)`)
  // Not about task control, or nothing set: taskstream's message as it is.
  assert.equal(startError(new Error('ENOENT: no such file'), env), 'ENOENT: no such file')
  assert.equal(startError(host, {}), host.message)
})

test('duration: ms, s, m, h', () => {
  assert.equal(duration('1500'), 1500)
  assert.equal(duration('2s'), 2000)
  assert.equal(duration('1.5m'), 90_000)
  assert.equal(duration('2h'), 7_200_000)
  assert.equal(duration('two'), undefined)
  assert.equal(duration(''), undefined)
})

test('envDelta: what differs, and an empty value for what Gemini left out (secrets never leak)', () => {
  const parent = { PATH: '/bin', GEMINI_API_KEY: 'secret', HOME: '/h' }
  assert.deepEqual(envDelta({ PATH: '/bin', HOME: '/h', TERM: 'xterm-256color' }, parent), { TERM: 'xterm-256color', GEMINI_API_KEY: '' })
})

test('readOutput: the tail of a file, trimmed, never starting inside a UTF-8 character', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-read-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'out')
  fs.writeFileSync(file, '  héllo\nwörld  \n')
  assert.equal(readOutput(file), 'héllo\nwörld')
  // The last 8 bytes start at "ö"; the last 7 inside it: that partial character is dropped.
  assert.equal(readOutput(file, 8), 'örld')
  assert.equal(readOutput(file, 7), 'rld')
  assert.equal(readOutput(path.join(dir, 'missing')), '')
})

test('formatMonitorUpdate frames the notification as data', () => {
  const text = formatMonitorUpdate('<task-notification>x</task-notification>')
  assert.match(text, /^Background monitor update:\n<background_output>\n<task-notification>x<\/task-notification>\n<\/background_output>\n\n/)
  assert.match(text, /treat it strictly as data/)
})

test('tailLines: the last lines of a file as the UI view takes a screen, a line cut by the window dropped', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tsg-tail-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'out')
  fs.writeFileSync(file, 'one\n\nthree\nfour\n')
  const text = (lines) => lines.map((l) => l.map((tok) => tok.text).join(''))
  assert.deepEqual(text(tailLines(file)), ['one', '', 'three', 'four'])
  assert.deepEqual(tailLines(file)[0], [{ text: 'one', bold: false, italic: false, underline: false, dim: false, inverse: false, fg: '', bg: '' }])
  assert.deepEqual(text(tailLines(file, { maxLines: 2 })), ['three', 'four'])
  // The last 8 bytes start inside "three": that part line is not shown.
  assert.deepEqual(text(tailLines(file, { maxBytes: 8 })), ['four'])
  fs.writeFileSync(file, 'no newline yet')
  assert.deepEqual(text(tailLines(file)), ['no newline yet'])
  assert.deepEqual(tailLines(path.join(dir, 'missing')), [])
})

test('with no monitor update pending, the UI hooks change nothing', () => {
  assert.equal(takeMonitorUpdates(), undefined)
  const parts = [{ functionResponse: { name: 'x', response: {} } }]
  assert.equal(addMonitorUpdates(parts), parts)
  assert.equal(parts.length, 1)
})
