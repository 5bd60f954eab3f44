import { defineConfig } from 'vitest/config';

// Two tiers of tests, told apart by their file names:
// - quick, `*.test.ts`: unit tests and HTTP tests of the real server started in the test process
//   (test/support/server.ts), on the run's one PostgreSQL. `npm run test:quick` runs these.
// - system, `*.system.test.ts`: tests that start processes of their own (`npm start` and other
//   server processes: crash, restart, shutdown, several processes on one database, an outage of
//   a PostgreSQL of their own; the Prism mock, Chromium, Ceph, QEMU, the README's blocks, the CLI
//   run as a process, `npm run fuzz`), and load campaigns (the burst of every write, the contract
//   fuzzer), which take minutes of CPU by design.
// TEST_TIER=quick or TEST_TIER=system runs one of them; unset, a run takes both (`npm test`).
const SYSTEM = 'test/**/*.system.test.ts';
const tiers = {
  quick: { include: ['test/**/*.test.ts'], exclude: [SYSTEM] },
  system: { include: [SYSTEM], exclude: [] },
  all: { include: ['test/**/*.test.ts'], exclude: [] },
} as const;
const tierName = process.env.TEST_TIER ?? 'all';
if (!(tierName in tiers)) throw new Error(`TEST_TIER must be quick or system (or unset for both), not "${tierName}"`);
const tier = tiers[tierName as keyof typeof tiers];

// VITEST_EXIT_CHECK=failing|passing runs only that fixture suite of the tier (scripts/check-test-exit.ts),
// under this same configuration, so that the check proves what the real run does with its status.
const exitCheck = process.env.VITEST_EXIT_CHECK;
const fixtures = 'test/fixtures/exit-status';

export default defineConfig({
  test: {
    include: exitCheck ? tier.include.map((pattern) => pattern.replace('test/**/*', `${fixtures}/${exitCheck}`)) : [...tier.include],
    exclude: [...tier.exclude, ...(exitCheck ? [] : ['test/fixtures/**']), '**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // Server tests start real processes (PostgreSQL, Prism, Chromium): give them time, and keep
    // the number of files running at once to the two cores these machines have.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    // The quick tier's files share their worker's modules: each file starts a server in the test
    // process, and importing the server and compiling the contract's validator again for every
    // file cost about a second of CPU each. Every such file starts its own platform on its own
    // database, so nothing of one file's platform is left to the next. The system tier's files
    // keep the default isolation.
    isolate: tierName !== 'quick',
    // The type-level tests (test/types/*.test-d.ts) are checked by `npm run typecheck`: tsc over
    // tsconfig.json, which takes in test/, fails on each expectation that does not hold. vitest's
    // own typecheck would run tsc over most of the project a second time.
  },
});
