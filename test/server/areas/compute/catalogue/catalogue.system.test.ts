// A bad catalogue file (CATALOGUE_FILE) stops `npm start` with the reason. Its checks, and the
// catalogue on the real server: catalogue.test.ts.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { DEFAULT_CATALOGUE_FILE } from '../../../../../server/areas/compute/catalogue/catalogue.ts';
import { createTestDatabase, startServerProcess } from '../../../../support/server.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'catalogue-'));
const defaultData = () => JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8'));

test('a bad CATALOGUE_FILE stops start-up with the reason', async () => {
  const file = path.join(dir, 'bad.json');
  const data = defaultData();
  data.regions[0].images[0].min_ram_mb = 64;
  writeFileSync(file, JSON.stringify(data));
  await expect(startServerProcess(await createTestDatabase(), { CATALOGUE_FILE: file })).rejects.toThrow(
    /The compute catalogue .*bad\.json is invalid: regions\[0\] \(fra1\)\.images\[0\]\.min_ram_mb must be an integer from 128 to 262144/,
  );
});
