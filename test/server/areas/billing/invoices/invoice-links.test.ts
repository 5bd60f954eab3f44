// The links of an invoice (its page and PDF) are signed and expire: a changed or expired link is
// 403, and no link opens another invoice. The month closed into an invoice by the operator's
// command: billing-run.system.test.ts.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createInvoiceLinks, invoiceLinkKey } from '../../../../../server/areas/billing/invoices/invoice-links.ts';
import { eventually } from '../../../../support/eventually.ts';
import { startTestServer, type TestServer } from '../../../../support/server.ts';

const HOUR = 3_600_000;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ METERING_INTERVAL_MS: '200' });
});
afterAll(() => server?.close());

test('invoice links are signed and expire: a changed or expired link is 403, and no link opens another invoice', async () => {
  const org = await server.createOrg('Linked', { demoHistory: true });
  const items = await eventually(async () => {
    const { items } = (await org.call('GET', '/invoices')).body;
    return items.length === 3 && items.every((item: { status: string }) => item.status === 'paid') ? items : undefined;
  });
  const [latest, older] = items;
  const html = await fetch(latest.hosted_invoice_url);
  expect(html.status).toBe(200);
  expect(await html.text()).toContain('Demo data');
  const forged = latest.hosted_invoice_url.replace(/signature=./, (prefix: string) =>
    prefix.endsWith('A') ? 'signature=B' : 'signature=A',
  );
  expect((await fetch(forged)).status).toBe(403);
  // The signature of one invoice does not open another, nor the other format.
  expect((await fetch(latest.hosted_invoice_url.replace(latest.id, older.id))).status).toBe(403);
  expect((await fetch(latest.hosted_invoice_url.replace('.html?', '.pdf?'))).status).toBe(403);
  const key = await invoiceLinkKey(server.pool);
  const yesterday = createInvoiceLinks(key, { baseUrl: server.url, ttlSeconds: 60, now: () => Date.now() - 2 * 24 * HOUR });
  const expired = await fetch(yesterday.url(org.orgId, latest.id, 'pdf'));
  expect(expired.status).toBe(403);
  expect(await expired.text()).toContain('expired');
  const fresh = createInvoiceLinks(key, { baseUrl: server.url, ttlSeconds: 60 });
  expect((await fetch(fresh.url(org.orgId, latest.id, 'pdf'))).status).toBe(200);
});
