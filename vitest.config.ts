import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/query-race-guard.ts'],
    // sqlite3 is a native module: separate processes keep each file's database handles apart.
    pool: 'forks',
    // Two files at a time. vitest's default is one less than the cores: on a 2-core machine a single file at a time,
    // and a file spends much of its run waiting (on PostgreSQL, on `emk` child processes, on timers), so one worker
    // leaves a core idle. Each file has databases of its own, so files never see each other's rows.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
