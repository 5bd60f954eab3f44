// A bad price list (PRICE_LIST) stops `npm start` with the reason. Its checks, and an operator's
// prices reaching getBilling and invoices: price-list.test.ts.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { DEFAULT_PRICE_LIST_FILE } from '../../../../../server/areas/billing/prices/price-list.ts';
import { createTestDatabase, startServerProcess } from '../../../../support/server.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'price-list-'));
const defaults = () => JSON.parse(readFileSync(DEFAULT_PRICE_LIST_FILE, 'utf8'));

test('a bad PRICE_LIST stops start-up with the reason', async () => {
  const file = path.join(dir, 'bad.json');
  const data = defaults();
  data.prices[2].unit_amount_micro_eur = 'cheap';
  writeFileSync(file, JSON.stringify(data));
  await expect(startServerProcess(await createTestDatabase(), { PRICE_LIST: file })).rejects.toThrow(
    /The price list .*bad\.json is invalid: prices\[2\]\.unit_amount_micro_eur must be a whole number/,
  );
});
