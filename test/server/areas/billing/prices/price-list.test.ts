// The price list is configuration (PRICE_LIST, a JSON file; the shipped default otherwise): its
// checks, and an operator's prices reaching getBilling and invoices. A bad file stopping
// `npm start`: price-list.system.test.ts.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import {
  buildPriceList,
  DEFAULT_PRICE_LIST_FILE,
  loadPriceList,
  PriceListError,
  priceInCents,
} from '../../../../../server/areas/billing/prices/price-list.ts';
import { startTestServer, type TestServer } from '../../../../support/server.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'price-list-'));
const defaults = () => JSON.parse(readFileSync(DEFAULT_PRICE_LIST_FILE, 'utf8'));

describe('checks', () => {
  test('the shipped list prices every meter once', () => {
    const list = loadPriceList();
    expect(list.prices.map((price) => price.meter)).toEqual([
      'vcpu_hour',
      'memory_gb_hour',
      'disk_gb_hour',
      'public_ip_hour',
      'storage_gb_month',
      'egress_gb',
    ]);
  });

  test.each([
    ['a meter missing', (data: any) => data.prices.pop(), /prices has no entry for egress_gb/],
    ['a meter twice', (data: any) => data.prices.push(data.prices[0]), /prices\[6\]: vcpu_hour is priced twice/],
    ['an unknown meter', (data: any) => (data.prices[0].meter = 'gpu_hour'), /prices\[0\]\.meter must be one of/],
    ['a wrong unit', (data: any) => (data.prices[0].unit = 'gb'), /prices\[0\]\.unit must be hour for vcpu_hour/],
    [
      'a fractional price',
      (data: any) => (data.prices[1].unit_amount_micro_eur = 0.5),
      /prices\[1\]\.unit_amount_micro_eur must be a whole number/,
    ],
    ['a negative price', (data: any) => (data.prices[1].unit_amount_micro_eur = -1), /prices\[1\]\.unit_amount_micro_eur/],
    ['an unknown field', (data: any) => (data.discount = 10), /the document has unknown fields: discount/],
    ['another currency', (data: any) => (data.currency = 'usd'), /currency must be "eur"/],
  ])('refuses %s, naming the entry', (_case, change, message) => {
    const data = defaults();
    change(data);
    expect(() => buildPriceList(data)).toThrow(PriceListError);
    expect(() => buildPriceList(data)).toThrow(message);
  });

  test('prices a decimal quantity exactly, rounded half up to the cent', () => {
    const list = buildPriceList(defaults());
    expect(priceInCents(list, 'vcpu_hour', '10.000000')).toBe(6);
    // 0.25 GB of egress at 10000 µEUR is a quarter cent: rounds to 0; 0.5 cent rounds up to 1.
    expect(priceInCents(list, 'egress_gb', '0.250000')).toBe(0);
    expect(priceInCents(list, 'egress_gb', '0.500000')).toBe(1);
    expect(priceInCents(list, 'disk_gb_hour', '123456.789012')).toBe(741);
  });
});

describe("an operator's price list", () => {
  let server: TestServer | undefined;
  afterAll(() => server?.close());

  test('is what getBilling shows and month-to-date is priced by', async () => {
    const file = path.join(dir, 'custom.json');
    const data = defaults();
    data.plan = { slug: 'startup', display_name: 'Startup' };
    data.prices[0].unit_amount_micro_eur = 12_000;
    writeFileSync(file, JSON.stringify(data));
    server = await startTestServer({ PRICE_LIST: file });
    const month = `${new Date().toISOString().slice(0, 7)}-01`;
    await server.pool.query("INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', 10)", [
      server.org.orgId,
      month,
    ]);
    const billing = (await server.org.call('GET', '/billing')).body;
    expect(billing.plan).toEqual({ slug: 'startup', display_name: 'Startup' });
    expect(billing.prices[0]).toEqual({ meter: 'vcpu_hour', unit: 'hour', unit_amount_micro_eur: 12_000 });
    expect(billing.month_to_date.estimated_cents).toBe(12);
  });
});
