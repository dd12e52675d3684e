// `npm test`, the README's test command: every suite of the repository, in the least wall time
// two cores allow.
//
//   1. side by side, since neither needs the other:
//      - `cargo test --no-run` (the Rust tests built), then `cargo test`;
//      - `npm run check` (citations, layers and the loader patch: under two seconds), then
//        `npm run build` (the release addon vitest loads), then `npm run typecheck` beside
//        `vitest run`. The check ends before the build begins, since the build writes the
//        loader the check reads; the Rust tests' build does not wait for it.
//      The two builds do not wait for each other: cargo locks each profile's directory
//      (target/release, target/debug) on its own, so after `npm run demo` the release build is a
//      no-op of seconds beside the Rust tests' build. (It once took 74 s there and ran first,
//      alone, for that: that was the binding compiled again because `napi build` had set
//      NAPI_FORCE_BUILD_TASKSTREAM on the demo's build and not on this one; .cargo/config.toml now
//      fixes that variable's value.)
//      Most of both runs waits on real child processes and timers, so they share the two cores.
//      The Rust tests' output is collected and printed whole when they end, so the two logs do
//      not interleave. Both branches always run to their end; a failure of either fails the run,
//      and the summary names it.
//
// The Rust tests are built with the dependencies the tests spend their time in optimised (the
// regex engine and its searchers, the terminal emulator, JSON), no dependency with debug info, and
// the test harnesses at opt-level 1 with line tables (debug assertions and overflow checks stay
// on): the core's property, split and linearity tests then do the same work in a fifth of the CPU
// (docs/development.md, "npm test"). The list is named rather than `package."*"`, which would also
// optimise the proc macros (syn, then built twice, serde_derive, napi-derive: 85 s more of a cold build on two
// cores, for tests no faster). The dependencies are compiled as one codegen unit each and the test
// harness as 16 (not 256): the same build in less CPU (measured 2026-11-29, a cold test build after
// `npm run build`: 189 CPU-s → 170 with the dependencies' units, → about 160 with the harness's),
// and CPU is what `npm test` runs short of after `npm run demo`; the harness stays incremental, so
// a rebuild after a change in the core is still quick. Given as `--config` here, so a plain
// `cargo test` keeps the default profile, and both builds are cached side by side.
//
// Each step has a time limit and runs in a process group of its own (scripts/lib/run.mjs): on a
// timeout its whole tree is killed.

import { main, MIN, run, StepError } from './lib/run.mjs'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const started = Date.now()
const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`
const OPTIMISED_DEPENDENCIES = ['regex', 'regex-automata', 'regex-syntax', 'aho-corasick', 'memchr', 'vt100', 'vte', 'serde_json', 'unicode-width']
const rustTestProfile = [
  ...OPTIMISED_DEPENDENCIES.map((name) => [`profile.dev.package.${name}.opt-level`, '2']),
  ['profile.dev.package."*".debug', 'false'],
  ['profile.dev.package."*".codegen-units', '1'],
  ['profile.test.opt-level', '1'],
  ['profile.test.codegen-units', '16'],
  ['profile.test.debug', '"line-tables-only"'],
].flatMap(([key, value]) => ['--config', `${key}=${value}`])

await main(async () => {
  const check = run('npm run check', npm, ['run', '--silent', 'check'], { timeoutMs: 5 * MIN })
  // A failed release build fails the vitest branch only: the Rust tests still run.
  const rust = (async () => {
    const built = Date.now()
    await run('cargo test --no-run (the Rust tests built)', 'cargo', ['test', '--no-run', ...rustTestProfile], { timeoutMs: 40 * MIN })
    console.log(`== the Rust tests built in ${seconds(Date.now() - built)}; running them beside vitest`)
    return run('cargo test', 'cargo', ['test', ...rustTestProfile], { timeoutMs: 30 * MIN, capture: true })
  })()
  const js = (async () => {
    await check.catch(() => {}) // its failure is reported with the others below
    await run('npm run build', npm, ['run', 'build'], { timeoutMs: 40 * MIN })
    // The type check needs no test to wait for it, nor any test the check: both run, and either
    // failing fails this branch.
    const results = await Promise.allSettled([
      run('npm run typecheck', npm, ['run', '--silent', 'typecheck'], { timeoutMs: 10 * MIN }),
      run('vitest run', npm, ['run', '--silent', 'test:js'], { timeoutMs: 30 * MIN }),
    ])
    const failed = results.find((r) => r.status === 'rejected')
    if (failed) throw failed.reason
  })()
  const [checkResult, rustResult, jsResult] = await Promise.allSettled([check, rust, js])

  const rustOut = rustResult.status === 'fulfilled' ? rustResult.value.stdout : rustResult.reason?.result?.stdout
  console.log('== cargo test (its output, collected while vitest ran)')
  process.stdout.write(rustOut ?? '(no output)\n')

  const failures = [checkResult, rustResult, jsResult].filter((r) => r.status === 'rejected').map((r) => r.reason)
  for (const error of failures) console.error(`FAIL ${error instanceof StepError ? error.message : error}`)
  if (failures.length > 0) throw new StepError(`npm test: ${failures.length} of 3 branches failed`, null)
  console.log(`== npm test passed in ${seconds(Date.now() - started)}`)
})
