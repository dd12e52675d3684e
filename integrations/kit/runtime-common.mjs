// What the integrations' runtimes share. `taskstream-<cli> patch` copies this file into the CLI's
// package as `<installDir>/common.mjs`, beside runtime.mjs; in the repository each runtime's
// common.mjs re-exports it. It imports nothing, so that it works wherever it is copied.

/**
 * What to pass as taskstream's `env` (added to the inherited environment) so that the child sees
 * `childEnv`, the environment the CLI would have given it. A variable the CLI leaves out (its
 * internal secrets, API keys its sanitiser drops) cannot be removed this way: it is overridden with
 * an empty value, so its value never leaks.
 */
export function envDelta(childEnv, parentEnv = process.env) {
  const env = {}
  for (const [key, value] of Object.entries(childEnv)) {
    if (value === undefined || value === null) continue
    if (parentEnv[key] !== String(value)) env[key] = String(value)
  }
  for (const key of Object.keys(parentEnv)) {
    if (!(key in childEnv) || childEnv[key] === undefined) env[key] = ''
  }
  return env
}

// Task control from the environment (taskstream API.md §6.8) ------------------------------------

/** Sizes: bytes, or K/M/G/T (powers of 1024). */
export const SIZE_UNITS = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }
/** Durations: milliseconds, or ms/s/m/h. */
export const TIME_UNITS = { '': 1, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** A positive whole number of `units` (`'2G'`, `'1.5m'`, `'512'`), or undefined when `text` is not one. */
export function wholeAmount(text, units) {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(String(text ?? ''))
  const unit = match && units[match[2].toLowerCase()]
  if (!match || unit === undefined) return undefined
  const value = Number(match[1]) * unit
  return Number.isSafeInteger(value) && value > 0 ? value : undefined
}

/**
 * The task-control variables of an integration, `<prefix>_<suffix>`: what each sets in
 * start()'s and executeBackground()'s options, and the units it takes.
 */
export const TASK_CONTROL = [
  { suffix: 'MEMORY_LIMIT', field: 'memoryBytes', units: SIZE_UNITS },
  { suffix: 'CPU_PERCENT', field: 'cpuPercent', units: { '': 1 } },
  { suffix: 'MAX_PROCESSES', field: 'maxProcesses', units: { '': 1 } },
  { suffix: 'TIMEOUT', field: 'timeoutMs', units: TIME_UNITS },
]

const warned = new Set()

/**
 * The task control the user set in the environment, for every task the integration starts:
 * `{ limits?: { memoryBytes?, cpuPercent?, maxProcesses? }, timeoutMs? }`, to spread into start()
 * and executeBackground(); `{}` when none is set (off unless set). A value that is not a positive
 * whole amount is ignored, with one line on stderr (`<tool>: ignoring <name>="<value>": …`, once
 * per name and value); the ranges are taskstream's (a value out of range fails the task's start
 * with taskstream's RangeError, as limits the host cannot enforce fail it with taskstream's Error:
 * see startErrorText).
 */
export function taskControlOptions(prefix, env = process.env, tool = 'taskstream') {
  const limits = {}
  let timeoutMs
  for (const { suffix, field, units } of TASK_CONTROL) {
    const name = `${prefix}_${suffix}`
    const text = env[name]
    if (text === undefined || text === '') continue
    const value = wholeAmount(text, units)
    if (value === undefined) {
      if (!warned.has(`${name}=${text}`)) {
        warned.add(`${name}=${text}`)
        process.stderr.write(`${tool}: ignoring ${name}=${JSON.stringify(text)}: not a positive whole amount\n`)
      }
      continue
    }
    if (field === 'timeoutMs') timeoutMs = value
    else limits[field] = value
  }
  return {
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  }
}

/**
 * The message of an error a task's start threw, with the task-control variables behind it named
 * when it is about them (taskstream names its options: `options.limits.memoryBytes`,
 * `options.timeoutMs`, `limits cannot be enforced on this host: …`), so the user sees which
 * setting to change: `… (TASKSTREAM_GEMINI_MEMORY_LIMIT=1)`.
 */
export function startErrorText(err, prefix, env = process.env) {
  const message = err instanceof Error ? err.message : String(err)
  const set = TASK_CONTROL.filter(({ suffix }) => env[`${prefix}_${suffix}`] !== undefined && env[`${prefix}_${suffix}`] !== '')
  const named = set.filter(({ field }) => message.includes(field === 'timeoutMs' ? 'options.timeoutMs' : `options.limits.${field}`))
  const about = named.length > 0 ? named : /\blimits\b/.test(message) ? set.filter(({ field }) => field !== 'timeoutMs') : []
  if (about.length === 0) return message
  return `${message} (${about.map(({ suffix }) => `${prefix}_${suffix}=${env[`${prefix}_${suffix}`]}`).join(', ')})`
}
