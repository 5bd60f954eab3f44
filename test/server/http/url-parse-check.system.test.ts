import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../../scripts/lib/run.ts';

const run = promisify(execFile);

/** The fixture's stdout (JSON) and the deprecation codes it printed on stderr. */
async function parseOnce(...args: string[]): Promise<{ noDeprecation: boolean; deprecations: string[] }> {
  const { stdout, stderr } = await run(process.execPath, [
    path.join(repoRoot, 'scripts', 'start.mjs'),
    path.join(repoRoot, 'test', 'fixtures', 'url-parse', 'parse-once.ts'),
    ...args,
  ]);
  return { ...(JSON.parse(stdout) as { noDeprecation: boolean }), deprecations: stderr.match(/DEP\d+/g) ?? [] };
}

// The validator's url.parse on every request: until one call has warned, Node 24 captures a stack
// trace on each call from node_modules to decide whether to warn (server/http/url-parse-check.ts).
describe('the legacy url.parse check, settled at start', () => {
  // Node 24's check (DEP0169 is Node 24's): the first call outside node_modules warns. Node 22
  // has no such check to settle.
  it.runIf(Number(process.versions.node.split('.')[0]) >= 24)(
    'is live until settled: a first url.parse outside node_modules warns (DEP0169)',
    async () => {
      expect((await parseOnce()).deprecations).toEqual(['DEP0169']);
    },
  );

  it('once settled, url.parse never warns again, nothing was printed, and deprecation warnings are back on', async () => {
    expect(await parseOnce('--settle')).toEqual({ noDeprecation: false, deprecations: [] });
  });
});
