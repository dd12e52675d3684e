import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A native addon belongs in forked processes, not worker threads.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
