// A pure-JavaScript REFERENCE of the TypeScript monitor pipeline (Qwen Code
// `tools/monitor.ts` + `services/monitorRegistry.ts`, as described in
// CONTRACT.md §2.1–§2.10), used by bench/monitor.mjs as the "before" side.
//
// Like the TypeScript tool, everything runs on the JS thread:
// child_process.spawn('bash', ['-c', cmd], { detached: true }), then per
// 'data' chunk: chunk.toString('utf-8') → strip-ansi regex → append to the
// stream's pending string → (no '\n' and > 4096 units: force-emit a cut) →
// split('\n') → trim → cut at 4096 → sanitizeMonitorLine (char loop + tag
// regex) → token bucket (burst 5 / 1000 ms, Date.now()) → registry emitEvent
// (2000-unit cut, display/model strings, idle timer reset) → callback.
// Settles on 'close' (after the pipes drained), as the TypeScript tool did.
// It is a benchmark reference, not a product: no owners, no pruning.
import { spawn } from 'node:child_process'

const PARTIAL_LINE_BUFFER_CAP = 4096
const EVENT_LINE_TRUNCATE = 2000

// ansi-regex 6.2 (what strip-ansi 7.2 uses), CONTRACT.md §1.7.
export const ANSI_REGEX =
  /\u001B\][\s\S]*?(?:\u0007|\u001B\u005C|\u009C)|[\u001B\u009B][[\]()#;?]*(?:\d{1,4}(?:[;:]\d{0,4})*)?[\dA-PR-TZcf-nq-uy=><~]/g
export const stripAnsiJs = (text) => text.replace(ANSI_REGEX, '')

const STRUCTURAL_ENVELOPE_TAGS = new Set([
  'task-notification',
  'task-id',
  'tool-use-id',
  'kind',
  'status',
  'event-count',
  'summary',
  'result',
])
const STRUCTURAL_TAG_REGEX = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)>/g

/** The TypeScript sanitizeMonitorLine: a per-character loop, then the tag regex. */
export function sanitizeMonitorLineJs(line) {
  let cleaned = ''
  for (let i = 0; i < line.length; i++) {
    const code = line.charCodeAt(i)
    if (code === 0x09) {
      cleaned += line[i]
      continue
    }
    if (code < 0x20) continue
    if (code >= 0x80 && code <= 0x9f) continue
    cleaned += line[i]
  }
  return cleaned.replace(STRUCTURAL_TAG_REGEX, (match, slash, name) =>
    STRUCTURAL_ENVELOPE_TAGS.has(String(name).toLowerCase()) ? `<${slash}\u200B${name}>` : match,
  )
}

export const escapeXmlJs = (text) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;')

// eslint-disable-next-line no-control-regex
const DISPLAY_CONTROL = /[\u0000-\u0008\u000A-\u001F\u0080-\u009F\u202A-\u202E\u2066-\u2069]/g
export const stripDisplayControlCharsJs = (text) => text.replace(DISPLAY_CONTROL, '')

function labelOf(description) {
  const collapsed = stripDisplayControlCharsJs(description).replace(/\s+/g, ' ').trim()
  const points = [...collapsed]
  return points.length > 80 ? `${points.slice(0, 77).join('')}...` : collapsed
}

let nextId = 0

export class ReferenceMonitorRegistry {
  constructor({ throttle = { burst: 5, refillMs: 1000 } } = {}) {
    this.throttle = throttle
    this.entries = new Map()
    this.callback = undefined
  }

  setNotificationCallback(cb) {
    this.callback = cb
  }

  get(id) {
    return this.entries.get(id)
  }

  /** Spawns and streams like the TypeScript monitor tool; returns the entry. */
  start({ command, description = command, maxEvents = 1000, idleTimeoutMs = 300_000, cwd = process.cwd(), env = {} }) {
    const monitorId = `ref_${(nextId++).toString(16).padStart(8, '0')}`
    const abortController = new AbortController()
    const entry = {
      monitorId,
      id: monitorId,
      command,
      description: sanitizeMonitorLineJs(description),
      status: 'running',
      startTime: Date.now(),
      endTime: undefined,
      eventCount: 0,
      lastEventTime: 0,
      maxEvents,
      idleTimeoutMs,
      droppedLines: 0,
      exitCode: undefined,
      error: undefined,
      pid: undefined,
      abortController,
      bytesSeen: 0, // bench counter: bytes delivered by the 'data' events
      idleTimer: undefined,
    }
    const child = spawn('bash', ['-c', command], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, TERM: 'dumb', PAGER: 'cat', ...env },
    })
    entry.pid = child.pid
    entry.child = child
    let exited = false

    const stdoutBuf = { value: '' }
    const stderrBuf = { value: '' }
    const { burst, refillMs } = this.throttle || { burst: Infinity, refillMs: 1 }
    let tokens = burst
    let lastRefill = Date.now()

    const throttledEmit = (line) => {
      const sanitized = sanitizeMonitorLineJs(line)
      if (sanitized.length === 0 || sanitized.trim().length === 0) return
      if (this.throttle) {
        const now = Date.now()
        const elapsed = now - lastRefill
        if (elapsed < 0) lastRefill = now
        else {
          const n = Math.floor(elapsed / refillMs)
          if (n > 0) {
            tokens = Math.min(burst, tokens + n)
            lastRefill += n * refillMs
          }
        }
        if (tokens <= 0) {
          entry.droppedLines++
          return
        }
        tokens--
      }
      this.emitEvent(monitorId, sanitized)
    }

    const flushPartialLineBuffers = () => {
      for (const buf of [stdoutBuf, stderrBuf]) {
        const trimmed = buf.value.trim()
        if (trimmed.length > 0) throttledEmit(trimmed)
        buf.value = ''
      }
    }

    const killTree = () => {
      if (exited || !child.pid) return
      try {
        process.kill(-child.pid, 'SIGTERM')
      } catch {}
      setTimeout(() => {
        if (!exited && child.pid) {
          try {
            process.kill(-child.pid, 'SIGKILL')
          } catch {}
        }
      }, 200).unref()
    }
    entry.killTree = killTree

    const abortHandler = () => {
      flushPartialLineBuffers()
      killTree()
    }
    abortController.signal.addEventListener('abort', abortHandler, { once: true })
    this.entries.set(monitorId, entry)
    this.resetIdleTimer(entry)

    const processLines = (buffer, data) => {
      entry.bytesSeen += data.length
      if (entry.status !== 'running') return
      buffer.value += stripAnsiJs(data.toString('utf-8'))
      if (!buffer.value.includes('\n') && buffer.value.length > PARTIAL_LINE_BUFFER_CAP) {
        const trimmed = buffer.value.trim()
        if (trimmed.length > 0) throttledEmit(`${trimmed.slice(0, PARTIAL_LINE_BUFFER_CAP)}...`)
        buffer.value = ''
        return
      }
      const lines = buffer.value.split('\n')
      buffer.value = lines.pop() ?? ''
      for (const line of lines) {
        const trimmed = line.trim()
        if (trimmed.length === 0) continue
        throttledEmit(trimmed.length > PARTIAL_LINE_BUFFER_CAP ? `${trimmed.slice(0, PARTIAL_LINE_BUFFER_CAP)}...` : trimmed)
      }
    }
    child.stdout.on('data', (d) => processLines(stdoutBuf, d))
    child.stderr.on('data', (d) => processLines(stderrBuf, d))

    let cleanedUp = false
    const cleanup = () => {
      if (cleanedUp) return
      cleanedUp = true
      flushPartialLineBuffers()
      abortController.signal.removeEventListener('abort', abortHandler)
    }
    let exitResult = null
    child.on('exit', (code, sig) => {
      exited = true
      exitResult = { code, sig }
    })
    child.on('close', (code, sig) => {
      exited = true
      cleanup()
      const r = exitResult ?? { code, sig }
      if (entry.status !== 'running') return
      if (abortController.signal.aborted) this.cancel(monitorId)
      else if (r.code !== null && r.code !== 0) this.fail(monitorId, `Exit code ${r.code}`)
      else if (r.sig) this.fail(monitorId, `Killed by signal ${r.sig}`)
      else this.complete(monitorId, r.code)
    })
    child.on('error', (err) => {
      exited = true
      cleanup()
      if (entry.status === 'running') this.fail(monitorId, err.message)
    })
    return entry
  }

  resetIdleTimer(entry) {
    if (entry.idleTimer) clearTimeout(entry.idleTimer)
    entry.idleTimer = setTimeout(() => {
      if (entry.status !== 'running') return
      entry.abortController.abort()
      if (entry.status !== 'running') return
      entry.error = 'Idle timeout'
      this.settle(entry, 'completed')
      this.notifyTerminal(entry, 'Idle timeout')
    }, entry.idleTimeoutMs)
    entry.idleTimer.unref()
  }

  emitEvent(id, line) {
    const entry = this.entries.get(id)
    if (!entry || entry.status !== 'running') return
    const truncated = line.length > EVENT_LINE_TRUNCATE ? `${line.slice(0, EVENT_LINE_TRUNCATE)}...[truncated]` : line
    entry.eventCount++
    entry.lastEventTime = Date.now()
    this.resetIdleTimer(entry)
    const desc = labelOf(entry.description)
    const shown = stripDisplayControlCharsJs(truncated)
    const display = `Monitor "${desc}" event #${entry.eventCount}: ${shown}`
    const model = [
      '<task-notification>',
      `<task-id>${escapeXmlJs(entry.monitorId)}</task-id>`,
      '<kind>monitor</kind>',
      '<status>running</status>',
      `<event-count>${entry.eventCount}</event-count>`,
      `<summary>Monitor "${escapeXmlJs(desc)}" emitted event #${entry.eventCount}.</summary>`,
      `<result>${escapeXmlJs(shown)}</result>`,
      '</task-notification>',
    ].join('\n')
    this.dispatch(display, model, entry)
    if (entry.eventCount >= entry.maxEvents) {
      entry.error = 'Max events reached'
      this.settle(entry, 'completed')
      entry.abortController.abort()
      this.notifyTerminal(entry, 'Max events reached')
    }
  }

  complete(id, exitCode) {
    const entry = this.entries.get(id)
    if (!entry || entry.status !== 'running') return
    entry.exitCode = exitCode ?? undefined
    this.settle(entry, 'completed')
    this.notifyTerminal(entry, typeof exitCode === 'number' ? `Exited with code ${exitCode}` : '')
  }

  fail(id, error) {
    const entry = this.entries.get(id)
    if (!entry || entry.status !== 'running') return
    entry.error = error
    this.settle(entry, 'failed')
    this.notifyTerminal(entry, error)
  }

  cancel(id, { notify = true } = {}) {
    const entry = this.entries.get(id)
    if (!entry || entry.status !== 'running') return
    if (!notify) {
      this.settle(entry, 'cancelled')
      entry.notified = true
      entry.abortController.abort()
      return
    }
    entry.abortController.abort()
    if (entry.status !== 'running') return
    this.settle(entry, 'cancelled')
    this.notifyTerminal(entry, '')
  }

  abortAll({ notify = true } = {}) {
    for (const id of [...this.entries.keys()]) this.cancel(id, { notify })
  }

  settle(entry, status) {
    entry.status = status
    entry.endTime = Date.now()
    if (entry.idleTimer) clearTimeout(entry.idleTimer)
    entry.idleTimer = undefined
  }

  notifyTerminal(entry, detail) {
    if (entry.notified) return
    entry.notified = true
    const desc = labelOf(entry.description)
    const statusText = entry.status === 'cancelled' ? 'was cancelled' : entry.status
    const dropped = entry.droppedLines > 0
    const display = `Monitor "${desc}" ${statusText}. (${entry.eventCount} events${dropped ? `, ${entry.droppedLines} lines dropped due to throttling` : ''})`
    const lines = [
      '<task-notification>',
      `<task-id>${escapeXmlJs(entry.monitorId)}</task-id>`,
      '<kind>monitor</kind>',
      `<status>${escapeXmlJs(entry.status)}</status>`,
      `<event-count>${entry.eventCount}</event-count>`,
      `<summary>Monitor "${escapeXmlJs(desc)}" ${statusText}. Total events: ${entry.eventCount}.${dropped ? ` ${entry.droppedLines} lines dropped due to throttling.` : ''}</summary>`,
      `<command>${escapeXmlJs(stripDisplayControlCharsJs(entry.command))}</command>`,
    ]
    if (detail) lines.push(`<result>${escapeXmlJs(stripDisplayControlCharsJs(detail))}</result>`)
    lines.push('</task-notification>')
    this.dispatch(display, lines.join('\n'), entry)
  }

  dispatch(display, model, entry) {
    try {
      this.callback?.(display, model, { monitorId: entry.monitorId, status: entry.status, eventCount: entry.eventCount })
    } catch (err) {
      console.error('reference monitor callback threw', err)
    }
  }
}
