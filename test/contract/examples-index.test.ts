// spec/README.md lists every operation's named examples (what `Prefer: example=<name>` picks on
// the mock), and the list is the contract's own: a stale list fails here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { EXAMPLES_INDEX_END, EXAMPLES_INDEX_START, examplesIndexMarkdown } from '../../scripts/lib/examples-index.ts';
import { repoRoot } from '../../scripts/lib/run.ts';
import { loadBundle } from '../support/contract.ts';

test('spec/README.md lists the named examples of every operation, as the contract has them (npm run spec:examples)', () => {
  const readme = readFileSync(path.join(repoRoot, 'spec', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(EXAMPLES_INDEX_START), readme.indexOf(EXAMPLES_INDEX_END) + EXAMPLES_INDEX_END.length);
  const expected = examplesIndexMarkdown(loadBundle());
  expect(section).toBe(expected);
  expect(section).toContain('| `deleteVm` |');
  expect(section).toMatch(/`vm_protected` \(409\)/);
});
