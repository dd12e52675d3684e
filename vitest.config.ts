import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.ts'],
    // Native addons belong in forked processes (NAPI.md §3): worker-thread pools race TSFN teardown.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
