// `npm test` (both tiers) and `npm run test:quick` (the quick tier): the static checks and the
// tests, side by side. The checks run one after another, each a single process (one core); the
// tests keep the other core busy. One after the other, the checks alone left a core idle for two
// minutes. The tests' output streams as it comes; each check says when it is done, and a failed
// check's output is printed again at the end, where it cannot be lost in the tests' output; so
// is each failed test's name (a CI log is read from its end, and the quick tier's failures would
// otherwise scroll away under the system tier's output).
//   tsx scripts/run-tests.ts quick|all
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bin, repoRoot, run } from './lib/run.ts';
import { failedTests, reporterArgs } from './lib/vitest-failures.ts';

const tier = process.argv[2];
if (tier !== 'quick' && tier !== 'all') {
  console.error('usage: tsx scripts/run-tests.ts quick|all');
  process.exit(2);
}

/** The static checks, as package.json names them; the exit-status check first, for the tiers that run. */
const CHECKS: Array<[name: string, args: string[]]> = [
  ['test:exit-check', ['run', '-s', 'test:exit-check', '--', '--tier', tier]],
  ['format:check', ['run', '-s', 'format:check']],
  ['lint', ['run', '-s', 'lint']],
  ['spec:lint', ['run', '-s', 'spec:lint']],
  ['generate:check', ['run', '-s', 'generate:check']],
  ['contract:check', ['run', '-s', 'contract:check']],
  ['typecheck', ['run', '-s', 'typecheck']],
];

interface Failed {
  name: string;
  output: string;
}

async function staticChecks(): Promise<Failed[]> {
  const failed: Failed[] = [];
  for (const [name, args] of CHECKS) {
    const started = performance.now();
    const result = await run('npm', args);
    const seconds = Math.round((performance.now() - started) / 1000);
    console.log(`\n[check] ${name}: ${result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`} in ${seconds} s\n`);
    if (result.code !== 0) failed.push({ name, output: `${result.stdout}\n${result.stderr}`.trim() });
  }
  return failed;
}

/** Where each tier's vitest writes its JSON report, read for the summary at the end. */
const reports = mkdtempSync(path.join(tmpdir(), 'cloud-tests-'));
const reportOf = (name: 'quick' | 'system') => path.join(reports, `${name}.json`);

/** vitest on one tier, its output straight to the terminal; resolves with its exit status. */
function vitestTier(name: 'quick' | 'system'): Promise<number> {
  return new Promise((resolve, reject) => {
    // The checks are named for the docs test, which leaves a page's block that only runs some of
    // them to this run rather than running them twice (scripts/readme-test.ts).
    const env = { ...process.env, TEST_TIER: name, NPM_TEST_CHECKS: CHECKS.map(([check]) => check).join(',') };
    const child = spawn(bin('vitest'), ['run', ...reporterArgs(reportOf(name))], { stdio: 'inherit', env });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/**
 * The tier's tests; `all` runs the quick tier, then the system tier, each as `test:quick` and
 * `test:system` run it (vitest.config.ts sets each tier's isolation), and fails if either does.
 */
async function tests(): Promise<{ status: number; failed: string[] }> {
  const quick = await vitestTier('quick');
  const failed = quick === 0 ? [] : failedTests(reportOf('quick'), repoRoot);
  if (tier === 'quick') return { status: quick, failed };
  const system = await vitestTier('system');
  if (system !== 0) failed.push(...failedTests(reportOf('system'), repoRoot));
  return { status: quick !== 0 ? quick : system, failed };
}

const started = performance.now();
const [failedChecks, { status: testStatus, failed: failedTestList }] = await Promise.all([staticChecks(), tests()]);
rmSync(reports, { recursive: true, force: true });
for (const { name, output } of failedChecks) console.error(`\n[check] ${name} failed:\n${output}\n`);
if (failedTestList.length > 0) console.error(`\n[tests] failed:\n${failedTestList.join('\n')}\n`);
const minutes = ((performance.now() - started) / 60_000).toFixed(1);
const failures = [...failedChecks.map(({ name }) => name), ...(testStatus === 0 ? [] : [`the tests (vitest exited ${testStatus})`])];
console.log(
  failures.length === 0
    ? `\n${tier === 'quick' ? 'test:quick' : 'npm test'}: every check and test passed in ${minutes} min.`
    : `\n${tier === 'quick' ? 'test:quick' : 'npm test'}: failed: ${failures.join(', ')} (${minutes} min).`,
);
process.exit(failures.length === 0 ? 0 : 1);
