import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Server tests start real processes (PostgreSQL, Prism, Chromium): give them time, and keep
    // the number of files running at once to the two cores these machines have.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    typecheck: {
      enabled: true,
      include: ['test/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
  },
});
