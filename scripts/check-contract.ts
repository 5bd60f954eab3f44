// The breaking-change check of the contract (part of `npm test`): compares generated/openapi.json
// (the bundle of spec/, kept fresh by generate:check) with the latest released contract in
// spec/released/ and fails on any change that breaks a client of it, unless the break is
// recorded in spec/released/accepted-breaks.yaml with the new major version that carries it.
//   npm run contract:check              the check; prints every change it found
//   npm run contract:check -- --changelog   the changes as CHANGELOG.md lines
import { bundlePath } from './lib/bundle.ts';
import {
  changelogSection,
  checkContract,
  readAcceptedBreaks,
  readContract,
  releasedPath,
  releasedVersions,
} from './lib/contract-versions.ts';

const versions = releasedVersions();
const latest = versions.at(-1);
if (!latest) throw new Error('spec/released/ holds no released contract (v<version>.json)');
const result = checkContract({
  released: readContract(releasedPath(latest)),
  current: readContract(bundlePath),
  accepted: readAcceptedBreaks(),
});

if (process.argv.includes('--changelog')) {
  // Changes not yet carried by a new info.version are "Unreleased"; otherwise today's date is the proposed release date.
  const unreleased = result.current.text === latest.text;
  console.log(
    changelogSection(
      unreleased ? 'Unreleased' : result.current.text,
      unreleased ? undefined : new Date().toISOString().slice(0, 10),
      result.changes,
    ),
  );
} else {
  for (const change of result.changes) console.log(`${change.kind.padEnd(10)} ${change.message}`);
  if (result.failures.length > 0) {
    console.error(`\ncontract:check: the contract breaks clients of ${latest.text}:`);
    for (const failure of result.failures) console.error(`  - ${failure}`);
    console.error(
      '\nWithin /v1 only additive changes are allowed (see "Versioning" in spec/openapi.yaml). Make the change additive, or\n' +
        'record a deliberate break in spec/released/accepted-breaks.yaml with the new major version that carries it.',
    );
    process.exit(1);
  }
  console.log(`contract:check: no breaking change against the released ${latest.text} (${result.changes.length} change(s)).`);
}
