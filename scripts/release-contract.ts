// Releases the contract: keeps generated/openapi.json as spec/released/v<info.version>.json (what
// later changes are checked against) and puts the changes since the previous release at the top
// of CHANGELOG.md. Run it when a version is published, after `npm run generate`:
//   npm run contract:release
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundlePath } from './lib/bundle.ts';
import {
  changelogSection,
  checkContract,
  readAcceptedBreaks,
  readContract,
  releasedPath,
  releasedVersions,
} from './lib/contract-versions.ts';
import { repoRoot } from './lib/run.ts';

const latest = releasedVersions().at(-1)!;
const result = checkContract({
  released: readContract(releasedPath(latest)),
  current: readContract(bundlePath),
  accepted: readAcceptedBreaks(),
});
if (result.failures.length > 0) {
  console.error(`contract:release: not released, the check fails:\n${result.failures.map((failure) => `  - ${failure}`).join('\n')}`);
  process.exit(1);
}
if (existsSync(releasedPath(result.current))) {
  console.error(`contract:release: ${result.current.text} is already released; raise info.version in spec/openapi.yaml first.`);
  process.exit(1);
}
copyFileSync(bundlePath, releasedPath(result.current));
const changelogPath = path.join(repoRoot, 'CHANGELOG.md');
const changelog = readFileSync(changelogPath, 'utf8');
const firstEntry = changelog.indexOf('\n## ');
const section = changelogSection(result.current.text, new Date().toISOString().slice(0, 10), result.changes);
writeFileSync(changelogPath, `${changelog.slice(0, firstEntry + 1)}${section}\n${changelog.slice(firstEntry + 1)}`);
console.log(`released ${result.current.text}: spec/released/v${result.current.text}.json, CHANGELOG.md`);
