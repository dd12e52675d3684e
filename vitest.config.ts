import { configDefaults, defineConfig } from 'vitest/config'

// Files that cannot apply on Windows, each for what it needs there; the Windows behaviour they
// would cover is checked by __test__/windows.test.ts (cmd.exe, Job Objects, exit codes) and by the
// Rust tests of src/core/process/windows/ and src/core/shell/tests/windows.rs. On every other
// platform every file runs, as before.
const unixOnly: Record<string, string> = {
  'containment.test.ts': 'bash commands with `&`, setsid and double-fork daemons, pids counted through /proc',
  'demo.test.ts': 'examples/demo.mjs runs bash commands (sleep, `&`, printf, read -p) in its monitors and shells',
  'lifetime.test.ts': 'the host ends by SIGTERM/SIGINT/SIGKILL and its sleep children are checked through /proc',
  'loader.test.ts': "copies and symlinks the linux-x64-gnu binding and asserts this machine's Unix package names",
  'monitor-native.test.ts': 'bash scripts (printf, sleep, kill -TERM $$) and "Killed by signal" endings',
  'persistence.test.ts': 'bash dev servers; its hosts end by SIGTERM/SIGKILL and processes are found by tag through /proc; windows.test.ts covers persist with cmd.exe',
  'optional-values.test.ts': 'starts bash commands (sleep, `;`) with cwd /tmp to reach every optional field',
  'primitives.test.ts': 'bash commands (sleep, printf, kill -TERM $$) and signal endings',
  'read-output.test.ts': 'a bash writer (seq, printf), mkfifo, and ELOOP for a symlink (O_NOFOLLOW)',
  'reachability.test.ts': 'its tasks are bash commands (a `while [ -e ]` gate, `true`) run by the thousand; Windows keeps its registries reachable through the same binding code',
  'reentrancy.test.ts': 'its retried start() uses the Unix cwd /nonexistent-taskstream-dir, not absolute on Windows',
  'shell-trust.test.ts': 'bash commands, FIFOs and symlinks at the output path, Unix errno texts (os error 21)',
  'shells.test.ts': 'bash commands, file modes (0600), symlinks and Unix paths (/tmp, /repo)',
  'signal-lane.test.ts': 'bash scripts (printf, sleep, seq) timing batch windows',
  'task-control.test.ts': 'bash trees (trap, `&`, $!), yes/head/tr floods and ports read through /proc; windows.test.ts covers timeoutMs, onOutputCap and yieldMs with cmd.exe',
  'terminal.test.ts': 'bash under a Unix pseudo-terminal (stty, tput, read -p, SIGWINCH); ConPTY is tested by windows.test.ts',
  'validation.test.ts': 'Unix paths (/tmp) as valid cwd and `touch` as the command that must not run',
  'vectors.test.ts': "CONTRACT.md §3's path vectors are Unix paths, and the symlink rows link to /etc",
}

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.ts'],
    // windows.test.ts runs on Windows only (and under Wine in `npm run test:windows`).
    exclude: [
      ...configDefaults.exclude,
      ...(process.platform === 'win32' ? Object.keys(unixOnly).map((f) => `__test__/${f}`) : ['__test__/windows.test.ts']),
    ],
    // Native addons belong in forked processes (NAPI.md §3): worker-thread pools race TSFN teardown.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
