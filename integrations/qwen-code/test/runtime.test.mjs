// The runtime's pure parts (the module patched installs import), without loading taskstream.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { RECOMMENDED_SIGNAL } from '../../../index.js'
import { envDelta, signalOptions, taskControlOptions } from '../runtime/runtime.mjs'

test('envDelta: what to add to the inherited environment so the child sees the CLI\'s environment', () => {
  const parent = { PATH: '/bin', HOME: '/h', QWEN_SERVER_TOKEN: 'secret', TERM: 'xterm' }
  const child = { PATH: '/bin', HOME: '/h', TERM: 'dumb', QWEN_CODE: '1', PAGER: 'cat' }
  // Unchanged variables are not repeated; changed and new ones are; removed ones are emptied.
  assert.deepEqual(envDelta(child, parent), { TERM: 'dumb', QWEN_CODE: '1', PAGER: 'cat', QWEN_SERVER_TOKEN: '' })
  assert.deepEqual(envDelta({ ...parent }, parent), {})
})

test('signalOptions: the addon\'s RECOMMENDED_SIGNAL (API.md §6.7) unless TASKSTREAM_QWEN_SIGNAL=0', () => {
  const saved = process.env.TASKSTREAM_QWEN_SIGNAL
  try {
    delete process.env.TASKSTREAM_QWEN_SIGNAL
    const addon = { RECOMMENDED_SIGNAL }
    assert.deepEqual(signalOptions(addon), { ...RECOMMENDED_SIGNAL })
    assert.equal(signalOptions(addon).digest, 'templates')
    assert.deepEqual(signalOptions(undefined), {}, 'no addon loaded: the stock throttle')
    process.env.TASKSTREAM_QWEN_SIGNAL = '0'
    assert.deepEqual(signalOptions(addon), {})
  } finally {
    if (saved === undefined) delete process.env.TASKSTREAM_QWEN_SIGNAL
    else process.env.TASKSTREAM_QWEN_SIGNAL = saved
  }
})

test('taskControlOptions: limits and a deadline from the environment, off unless set', () => {
  assert.deepEqual(taskControlOptions({}), {})
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_MEMORY_LIMIT: '' }), {})
  assert.deepEqual(
    taskControlOptions({
      TASKSTREAM_QWEN_MEMORY_LIMIT: '2G',
      TASKSTREAM_QWEN_CPU_PERCENT: '150',
      TASKSTREAM_QWEN_MAX_PROCESSES: '512',
      TASKSTREAM_QWEN_TIMEOUT: '30m',
    }),
    { limits: { memoryBytes: 2 * 1024 ** 3, cpuPercent: 150, maxProcesses: 512 }, timeoutMs: 1_800_000 },
  )
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_MEMORY_LIMIT: '536870912' }), { limits: { memoryBytes: 536_870_912 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_MEMORY_LIMIT: '1.5g' }), { limits: { memoryBytes: 1.5 * 1024 ** 3 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_TIMEOUT: '90s' }), { timeoutMs: 90_000 })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_TIMEOUT: '2500' }), { timeoutMs: 2500 })
  // Not a positive whole amount: ignored (one line on stderr), the rest still applies.
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_MEMORY_LIMIT: 'lots', TASKSTREAM_QWEN_CPU_PERCENT: '0', TASKSTREAM_QWEN_MAX_PROCESSES: '64' }), { limits: { maxProcesses: 64 } })
  assert.deepEqual(taskControlOptions({ TASKSTREAM_QWEN_TIMEOUT: '5 weeks' }), {})
})
