import { defineConfig } from 'vitest/config';

// VITEST_EXIT_CHECK=failing|passing runs only that fixture suite (scripts/check-test-exit.ts),
// under this same configuration, so that the check proves what the real run does with its status.
const exitCheck = process.env.VITEST_EXIT_CHECK;

export default defineConfig({
  test: {
    include: exitCheck ? [`test/fixtures/exit-status/${exitCheck}.test.ts`] : ['test/**/*.test.ts'],
    exclude: exitCheck ? [] : ['test/fixtures/**', '**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // Server tests start real processes (PostgreSQL, Prism, Chromium): give them time, and keep
    // the number of files running at once to the two cores these machines have.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    typecheck: {
      enabled: !exitCheck,
      include: ['test/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
  },
});
