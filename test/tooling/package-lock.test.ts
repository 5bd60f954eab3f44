// `npm install` on a clean clone must leave package-lock.json as committed. npm writes the lock
// file's root entry from package.json: each dependency under the one group package.json names it
// in. `npm install --save-optional` writes an optional dependency under `dependencies` as well
// (npm merges optional dependencies into its reading of the manifest), and the next plain
// `npm install` drops that copy: a fresh clone then showed package-lock.json modified. `npm ci`
// never writes the lock file, so CI did not see it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { repoRoot } from '../../scripts/lib/run.ts';

const readJson = (file: string) => JSON.parse(readFileSync(path.join(repoRoot, file), 'utf8')) as Record<string, any>;

test("package-lock.json's root entry is package.json's, as npm install writes it", () => {
  const manifest = readJson('package.json');
  const root = readJson('package-lock.json').packages[''];
  for (const field of ['name', 'version', 'dependencies', 'devDependencies', 'optionalDependencies', 'engines', 'bin'])
    expect(root[field], field).toEqual(manifest[field]);
});
