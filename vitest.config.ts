import { defineConfig } from 'vitest/config';

// A timeout here guards against a hang, it is not a speed target: the end-to-end tests start
// servers and CLI processes, whose wall time grows with whatever else the machine runs, so
// they get a bound a loaded two-core machine stays far below.
export default defineConfig({
  // Vitest's caches (test durations, which order the next run's files) stay in this
  // checkout: node_modules may be shared with other checkouts.
  cacheDir: '.cache/vite',
  test: {
    hookTimeout: 60_000,
    // expect.poll waits for something to happen; its bound is a hang guard too.
    expect: { poll: { timeout: 30_000 } },
    // Three workers on two cores: the third fills the time tests wait on what they start.
    // 308 s against 335 s with two (the whole suite, a quiet machine, same code). PostgreSQL's
    // tests stay within the server's 100 connections by their small pools (test/replicas/pg.ts):
    // 62 at most, sampled through that run.
    maxWorkers: 3,
    // Child processes, not threads: tests that run the CLI in-process change the working
    // directory (test/support/cli-in-process.ts), which a worker thread cannot.
    pool: 'forks',
    // A worker runs file after file in one module graph instead of importing the sources
    // again for each file (importing was about as long as the tests themselves). Tests keep
    // their state in what they create (apps, stores, servers, temp directories), never in a
    // module; docs/testing.md says what that asks of a new test.
    isolate: false,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts', 'test/**/*.test.tsx'], exclude: ['test/e2e/**'], testTimeout: 30_000 } },
      // The tests of compiled JavaScript: the build is brought up to date once, before them.
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], testTimeout: 120_000, globalSetup: ['test/support/build-once.ts'] } },
    ],
  },
});
