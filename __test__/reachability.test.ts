// Registries and memory over time, each in a child Node with --expose-gc:
// - a registry that nothing references keeps itself reachable while it has
//   work (a running task, a pending wait, a notification to deliver), so a
//   garbage collection cancels nothing; once all settled it is collected;
// - thousands of short tasks in sequence leave the heap where it was.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const fixtures = join(__dirname, 'fixtures')

/** Runs a fixture under `node --expose-gc`; the child (and its tasks, which die with it) is killed on timeout. */
function runGcFixture(file: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--expose-gc', join(fixtures, file), ...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 2 ** 20 },
      (error, stdout, stderr) => (error ? reject(new Error(`${file} ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout)),
    )
  })
}

describe('a registry nothing references', () => {
  it('delivers its tasks, waits and idle timeouts through garbage collections, then is collected', async () => {
    const out = JSON.parse(await runGcFixture('unreferenced-registries.js', [], 90_000)) as {
      results: Record<string, string[]>
      collected: string[]
      expected: string[]
    }
    const { results } = out
    // Nothing was cancelled: each task's line and its real end arrived.
    for (const name of ['monitor', 'terminal']) {
      expect(results[name], name).toHaveLength(2)
      expect(results[name][0], name).toMatch(/event #1: still-here$/)
      expect(results[name][1], name).toMatch(/completed\. \(1 events\)$/)
    }
    expect(results.shell).toHaveLength(1)
    expect(results.shell[0]).toMatch(/^Background shell ".*" completed\.$/)
    expect(results.fed).toEqual(['Monitor "fed" completed. (0 events)'])
    for (const name of ['monitorWait', 'shellWait']) {
      expect(JSON.parse(results[name][0]), name).toMatchObject({ reason: 'match', line: 'still-here' })
    }
    // Every registry became collectable once its work settled.
    expect(out.collected).toEqual(out.expected)
  }, 120_000)
})

interface Sample {
  kind: string
  tasks: number
  heapMiB: number
  rssMiB: number
}

async function soak(kind: string, total: number): Promise<Sample[]> {
  const out = await runGcFixture('soak.js', [kind, String(total), '1000'], 400_000)
  return out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Sample)
}

describe('thousands of short tasks in sequence', () => {
  // The heap after a GC at 5,000 tasks is within 1 MiB of its value at 1,000.
  it.each(['shells', 'monitors', 'terminal'])('%s (with waits) leave the heap flat', async (kind) => {
    const samples = await soak(kind, 5000)
    expect(samples.map((s) => s.tasks)).toEqual([1000, 2000, 3000, 4000, 5000])
    const growth = samples[4].heapMiB - samples[0].heapMiB
    expect(growth, JSON.stringify(samples)).toBeLessThan(1)
  }, 420_000)
})
