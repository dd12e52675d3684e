// The benchmarks' one-fresh-Node-process-per-measurement plumbing: the parent
// runs `<script> --worker <args…>` and reads back one `RESULT <json>` line.
import { spawn } from 'node:child_process'

/** Worker side: runs `scenario(...args)` and prints its result. */
export async function runWorker(scenario, ...args) {
  const keepAlive = setInterval(() => {}, 1000)
  process.on('SIGTERM', () => process.exit(1))
  try {
    const result = await scenario(...args)
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
  } finally {
    clearInterval(keepAlive)
  }
}

/** Parent side: runs `script --worker ...args` in a fresh Node process (killed after 240 s) and resolves with its result. */
export function spawnWorker(script, ...args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, '--worker', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    const timer = setTimeout(() => {
      child.kill('SIGTERM')
      setTimeout(() => child.kill('SIGKILL'), 2000).unref()
    }, 240_000)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const line = out.split('\n').find((l) => l.startsWith('RESULT '))
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)))
      else reject(new Error(`worker ${args.join(' ')} ended with ${signal ?? code}: ${out.slice(-500)}`))
    })
  })
}
