// Writes the list of every operation's named examples into spec/README.md (between its
// examples-index markers), from generated/openapi.json: what a front-end developer picks with
// `Prefer: example=<name>` on the mock. test/contract/examples-index.test.ts fails when it is stale.
//   npm run spec:examples
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundlePath } from './lib/bundle.ts';
import { examplesIndexMarkdown, withExamplesIndex } from './lib/examples-index.ts';
import { repoRoot } from './lib/run.ts';

const readmePath = path.join(repoRoot, 'spec', 'README.md');
const document = JSON.parse(readFileSync(bundlePath, 'utf8')) as Record<string, unknown>;
writeFileSync(readmePath, withExamplesIndex(readFileSync(readmePath, 'utf8'), examplesIndexMarkdown(document)));
console.log('wrote the named examples of every operation into spec/README.md');
