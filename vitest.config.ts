import { defineConfig } from 'vitest/config';

// A timeout here guards against a hang, it is not a speed target: the end-to-end tests start
// servers and CLI processes, whose wall time grows with whatever else the machine runs, so
// they get a bound a loaded two-core machine stays far below.
export default defineConfig({
  test: {
    hookTimeout: 60_000,
    // expect.poll waits for something to happen; its bound is a hang guard too.
    expect: { poll: { timeout: 30_000 } },
    // Two cores: more workers only fight over them.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts', 'test/**/*.test.tsx'], exclude: ['test/e2e/**'], testTimeout: 30_000 } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], testTimeout: 120_000 } },
    ],
  },
});
