// What the integrations' runtimes share. `taskstream-<cli> patch` copies this file into the CLI's
// package as `<installDir>/common.mjs`, beside runtime.mjs; in the repository each runtime's
// common.mjs re-exports it.

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
