// A pure-JavaScript REFERENCE of the TypeScript background shell (the
// `is_background` path of the CLI's shell tool, as CONTRACT.md §2.15
// describes what taskstream replaces), used by bench/shells.mjs as the
// "before" side.
//
// Like the TypeScript tool, everything runs on the JS thread:
// child_process.spawn('bash', ['-c', cmd], { detached: true }) with stdin
// ignored and stdout/stderr as pipes, then per 'data' chunk of either pipe:
// chunk.toString('utf-8') → the strip-ansi regex (ansi-regex 6.2, CONTRACT.md
// §1.7) → fs.WriteStream.write(), in arrival order, without waiting for
// 'drain' (a plain write per 'data' event). When the child has closed (both pipes at
// EOF), the stream is ended; the run resolves once it has finished.
//
// It is a benchmark reference, not a product: no registry, no status sidecar,
// no binary sniff, no cap, and a character or escape sequence split across
// two chunks is decoded/stripped per chunk, as the TypeScript tool did.
import { spawn } from 'node:child_process'
import { createWriteStream, mkdirSync } from 'node:fs'
import { join } from 'node:path'

import { stripAnsiJs } from './reference-monitor.mjs'

let nextId = 0

/**
 * Starts `command` as a background shell writing to
 * `<outputDir>/shell-<id>.output`. Returns `{ shellId, pid, outputPath, child,
 * done }`; `done` resolves with `{ exitCode, signal, bytesRead, bytesWritten }`
 * after the process closed and the file stream finished.
 */
export function executeBackgroundReference({ command, cwd = process.cwd(), outputDir, env = {} }) {
  const shellId = `ref_${(nextId++).toString(16).padStart(8, '0')}`
  mkdirSync(outputDir, { recursive: true })
  const outputPath = join(outputDir, `shell-${shellId}.output`)
  const out = createWriteStream(outputPath, { mode: 0o600 })
  const child = spawn('bash', ['-c', command], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, TERM: 'xterm-256color', PAGER: 'cat', ...env },
  })
  let bytesRead = 0
  let bytesWritten = 0
  const onData = (chunk) => {
    bytesRead += chunk.length
    const text = stripAnsiJs(chunk.toString('utf-8'))
    bytesWritten += Buffer.byteLength(text, 'utf-8')
    out.write(text)
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  const done = new Promise((resolve, reject) => {
    let failed = false
    child.on('error', (err) => {
      failed = true
      out.end()
      reject(err)
    })
    out.on('error', (err) => {
      failed = true
      reject(err)
    })
    child.on('close', (exitCode, signal) => {
      if (failed) return
      out.end(() => resolve({ shellId, exitCode, signal, bytesRead, bytesWritten }))
    })
  })
  return { shellId, pid: child.pid, outputPath, child, done }
}
