// Billing: the spend budget's every rule (interface 4.3), exact integers end to end, the price
// list and month-to-date estimate, and the invoices the billing simulator issues.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { billingRunLock } from '../../../../../server/areas/billing/invoices/invoice-issuing.ts';
import { eventually } from '../../../../support/eventually.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const MAX = 9223372036854775807n;

describe('setBillingBudget', () => {
  test.each([
    ['0', '{"spend_budget_cents": 0}'],
    ['a negative number', '{"spend_budget_cents": -1}'],
    ['a numeric string', '{"spend_budget_cents": "100"}'],
    ['a boolean', '{"spend_budget_cents": true}'],
    ['a fraction', '{"spend_budget_cents": 1.5}'],
    ['a missing key', '{}'],
    ['an unknown field beside it', '{"spend_budget_cents": 100, "currency": "eur"}'],
    ['2^63, one above the maximum', '{"spend_budget_cents": 9223372036854775808}'],
    ['a huge integer', '{"spend_budget_cents": 123456789012345678901234567890}'],
    ['an array', '{"spend_budget_cents": [100]}'],
  ])('refuses %s with 400 validation_failed and a pointer', async (_case, rawBody) => {
    await server.org.call('PUT', '/billing', { body: { spend_budget_cents: 4242 } });
    const response = await server.org.call('PUT', '/billing', { rawBody });
    expect(response.status, response.text).toBe(400);
    expect(response.body.code).toBe('validation_failed');
    expect(response.body.errors.length).toBeGreaterThan(0);
    expect(
      response.body.errors.every(
        (error: { pointer: string }) => error.pointer === '/spend_budget_cents' || error.pointer === '' || error.pointer === '/currency',
      ),
    ).toBe(true);
    // Nothing was lost or changed by the refused request.
    expect((await server.org.call('GET', '/billing')).body.spend_budget_cents).toBe(4242);
  });

  test('refuses a body that is not an object', async () => {
    const response = await server.org.call('PUT', '/billing', { rawBody: '100' });
    expect(response.status).toBe(400);
  });

  test('stores and returns 9223372036854775807 exactly, through PostgreSQL bigint', async () => {
    const set = await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 9223372036854775807}' });
    expect(set.status, set.text).toBe(200);
    expect(set.text).toContain('"spend_budget_cents":9223372036854775807');
    expect(set.body.spend_budget_cents).toBe(MAX);
    const read = await server.org.call('GET', '/billing');
    expect(read.text).toContain('"spend_budget_cents":9223372036854775807');
    const stored = await server.pool.query('SELECT spend_budget_cents::text AS cents FROM billing_accounts WHERE org_id = $1', [
      server.org.orgId,
    ]);
    expect(stored.rows[0].cents).toBe('9223372036854775807');
  });

  test('keeps integers just above 2^53 exact', async () => {
    const set = await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 9007199254740993}' });
    expect(set.status).toBe(200);
    expect(set.text).toContain('"spend_budget_cents":9007199254740993');
  });

  test('accepts 1, the smallest budget, and null, which clears it', async () => {
    expect((await server.org.call('PUT', '/billing', { body: { spend_budget_cents: 1 } })).body.spend_budget_cents).toBe(1);
    const cleared = await server.org.call('PUT', '/billing', { body: { spend_budget_cents: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.spend_budget_cents).toBeNull();
  });

  test('needs the write scope', async () => {
    const readOnly = await server.org.memberKey('owner', ['read']);
    const response = await server.org.call('PUT', '/billing', { body: { spend_budget_cents: 5 }, key: readOnly });
    expect(response.status).toBe(403);
    expect(response.body.code).toBe('forbidden');
  });

  test('leaves an audit event with the budget before and after, exactly', async () => {
    await server.org.call('PUT', '/billing', { body: { spend_budget_cents: 700 } });
    await server.org.call('PUT', '/billing', { rawBody: '{"spend_budget_cents": 9223372036854775807}' });
    const events = await server.org.call('GET', '/audit-events?action=billing.set_budget&limit=1');
    expect(events.body.items[0]).toMatchObject({
      action: 'billing.set_budget',
      resource_type: 'billing',
      result: 'succeeded',
      before: { spend_budget_cents: 700 },
      after: { spend_budget_cents: MAX },
    });
  });
});

describe('getBilling', () => {
  test('shows the price list, the plan, the period end and the month-to-date estimate', async () => {
    const response = await server.org.call('GET', '/billing');
    expect(response.status).toBe(200);
    expect(response.body.prices.map((price: { meter: string }) => price.meter)).toEqual([
      'vcpu_hour',
      'memory_gb_hour',
      'disk_gb_hour',
      'public_ip_hour',
      'storage_gb_month',
      'egress_gb',
    ]);
    expect(response.body.plan).toEqual({ slug: 'standard', display_name: 'Standard' });
    const now = new Date();
    expect(response.body.current_period_end).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
    expect(response.body.month_to_date).toEqual({ egress_gb: '0.000000', estimated_cents: 0, storage_gb_month: '0.000000' });
  });

  test('prices metered usage of the month: 10 vCPU-hours at 6000 µEUR are 6 cents', async () => {
    const other = await server.createOrg('Metered');
    const month = `${new Date().toISOString().slice(0, 7)}-01`;
    await server.pool.query(
      "INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', 10), ($1, $2, 'egress_gb', 2.5)",
      [other.orgId, month],
    );
    const response = await other.call('GET', '/billing');
    expect(response.body.month_to_date).toEqual({ egress_gb: '2.500000', estimated_cents: 6 + 3, storage_gb_month: '0.000000' });
  });
});

/** An organization with a demo history, once the billing run (the metering loop) has issued its invoices. */
async function demoOrg(name: string): Promise<TestOrg> {
  const org = await server.createOrg(name, { demoHistory: true });
  await eventually(async () => {
    const { items } = (await org.call('GET', '/invoices')).body;
    return items.length === 3 && items.every((invoice: { status: string }) => invoice.status !== 'draft') ? true : undefined;
  }, 'the billing run to issue and collect three invoices');
  return org;
}

describe('invoices', () => {
  test('a new organization has no invented history: no invoices, nothing billed', async () => {
    const org = await server.createOrg('Fresh');
    // Several billing runs later, still nothing: reads issue nothing either.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect((await org.call('GET', '/invoices')).body).toEqual({ items: [], next_cursor: null });
    const usage = await server.pool.query('SELECT 1 FROM usage_totals WHERE org_id = $1', [org.orgId]);
    expect(usage.rowCount).toBe(0);
  });

  test('reading invoices issues none: the billing run does, in the background', async () => {
    const org = await server.createOrg('Unread', { demoHistory: true });
    const countInvoices = async () =>
      (await server.pool.query('SELECT count(*)::int AS n FROM invoices WHERE org_id = $1', [org.orgId])).rows[0].n as number;
    // The billing run is held back for this organization (its lock held here) while the invoices
    // are read: whatever is issued meanwhile, the read issued. (Straight after the creation, on a
    // loaded machine, the run sometimes passed between the two counts.)
    const holder = await server.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(billingRunLock(org.orgId));
      const before = await countInvoices();
      expect((await org.call('GET', '/invoices')).status).toBe(200);
      expect(await countInvoices()).toBe(before);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    await eventually(async () => ((await countInvoices()) === 3 ? true : undefined), 'the billing run to issue three invoices');
  });

  test('a demo history gives three past monthly invoices, labelled demo, newest first', async () => {
    const org = await demoOrg('Demo');
    const response = await org.call('GET', '/invoices');
    expect(response.status).toBe(200);
    expect(response.body.items).toHaveLength(3);
    const now = new Date();
    const expectedStarts = [1, 2, 3].map((back) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1)).toISOString());
    expect(response.body.items.map((invoice: { period_start: string }) => invoice.period_start)).toEqual(expectedStarts);
    for (const invoice of response.body.items) {
      expect(invoice).toMatchObject({ status: 'paid', currency: 'eur', amount_due_cents: 0 });
      expect(invoice.total_cents).toBeGreaterThan(0);
      expect(invoice.id).toMatch(/^in_demo_\d{4}_\d{2}_[0-9a-f]{8}$/);
      // Pages the platform serves itself, behind signed links.
      expect(invoice.hosted_invoice_url).toMatch(
        new RegExp(`^${server.url}/billing/invoices/${invoice.id}\\.html\\?expires=\\d+&signature=[\\w-]+$`),
      );
      expect(invoice.invoice_pdf).toMatch(
        new RegExp(`^${server.url}/billing/invoices/${invoice.id}\\.pdf\\?expires=\\d+&signature=[\\w-]+$`),
      );
    }
  });

  test("an invoice total is its month's metered usage priced by the price list", async () => {
    const org = await demoOrg('Priced');
    const [latest] = (await org.call('GET', '/invoices?limit=1')).body.items;
    const usage = await server.pool.query<{ meter: string; quantity: string }>(
      'SELECT meter, quantity::text FROM usage_totals WHERE org_id = $1 AND month = $2::date',
      [org.orgId, latest.period_start.slice(0, 10)],
    );
    const prices: Record<string, number> = {
      vcpu_hour: 6000,
      memory_gb_hour: 3000,
      disk_gb_hour: 60,
      public_ip_hour: 1000,
      storage_gb_month: 20000,
      egress_gb: 10000,
    };
    const expected = usage.rows.reduce((sum, row) => sum + Math.round((Number(row.quantity) * prices[row.meter]!) / 10000), 0);
    expect(latest.total_cents).toBe(expected);
  });

  test('pages with limit and next_cursor, without gaps or repeats', async () => {
    const org = await demoOrg('Paged');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const response: { body: { items: Array<{ id: string }>; next_cursor: string | null } } = await org.call(
        'GET',
        `/invoices?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...response.body.items.map((invoice) => invoice.id));
      cursor = response.body.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(3);
  });

  test("getInvoice returns one invoice; another organization's invoice is 404", async () => {
    const org = await demoOrg('Reader');
    const [first] = (await org.call('GET', '/invoices')).body.items;
    expect((await org.call('GET', `/invoices/${first.id}`)).body).toEqual(first);
    const stranger = await server.createOrg('Stranger');
    const response = await stranger.call('GET', `/invoices/${first.id}`);
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('not_found');
  });
});
