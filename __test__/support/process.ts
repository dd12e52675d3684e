// Process helpers for tests: liveness checks by pid, waiting without timing assertions.
import { readFileSync } from 'node:fs'

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z'
  } catch {
    return false
  }
}

export async function waitFor(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A command that runs `script` through fixtures/eval.sh (for scripts with `&`). */
export function viaScript(script: string): string {
  const path = require('node:path').join(__dirname, '..', 'fixtures', 'eval.sh')
  return `bash ${path} '${script.replaceAll("'", "'\\''")}'`
}
