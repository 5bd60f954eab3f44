// Invoices as a customer reads them: the seller (from the configuration) and the buyer (the
// organization), the tax line at the configured rate (or none, said so), and the amount paid beside
// the amount due as the billing provider collected it, the same on the page and in the PDF, opened
// from the links of the API's answer. A month is closed by the operator's test clock, as
// docs/billing.md shows; what an invoice says is fixed when it is issued.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runAdminCommand } from '../../../../../server/admin/commands.ts';
import { taxOn } from '../../../../../server/areas/billing/invoices/invoice-terms.ts';
import { renderInvoiceHtml, renderInvoicePdf } from '../../../../../server/areas/billing/invoices/invoice-render.ts';
import type { InvoiceDocument } from '../../../../../server/areas/billing/invoices/invoice-rows.ts';
import { ConfigError, loadConfig } from '../../../../../server/config.ts';
import { createLogger } from '../../../../../server/logging.ts';
import { eventually } from '../../../../support/eventually.ts';
import { pdfText } from '../../../../support/pdf-text.ts';
import { call, startTestServer, TEST_ENV, type TestServer } from '../../../../support/server.ts';
import { runningVm } from '../../compute/fixtures.ts';

const SELLER = {
  INVOICE_SELLER_NAME: 'Nordwind Cloud GmbH',
  INVOICE_SELLER_ADDRESS: 'Hafenstraße 7; 20457 Hamburg; Germany',
  INVOICE_SELLER_TAX_ID: 'DE812345678',
  INVOICE_SELLER_EMAIL: 'billing@nordwind.example',
};
const VAT_19 = { INVOICE_TAX_NAME: 'VAT', INVOICE_TAX_RATE: '19' };

/** Cents as the documents print them. */
const shown = (cents: number) => (cents / 100).toFixed(2);

/** Milliseconds from `at` to one day past the start of the next month (UTC). */
const pastMonthEnd = (at: Date) => Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 2) - at.getTime();

/**
 * An organization's first invoice: an instance runs (through the API), then the operator moves the
 * organization's clock past the month's end (`npm run admin -- clock advance`, in this process,
 * with the server's configuration, as every process that issues invoices must have), and the
 * billing run issues the month's invoice and has the provider collect it.
 */
async function firstInvoice(server: TestServer, env: Record<string, string>, name: string) {
  const org = await server.createOrg(name);
  await runningVm(server, org);
  const config = loadConfig({ ...TEST_ENV, ...env, TEST_CLOCKS: 'true', DATABASE_URL: server.databaseUrl });
  await runAdminCommand(server.pool, 'clock', { org: org.orgId, by: `${Math.ceil(pastMonthEnd(new Date()) / 1000)}s` }, 'operator-olga', {
    config,
    log: createLogger('silent'),
    args: ['advance'],
  });
  const invoice = await eventually(async () => {
    const [latest] = (await org.call('GET', '/invoices')).body.items;
    return latest && latest.status !== 'draft' ? latest : undefined;
  }, 'the invoice to be issued and collected');
  return { org, invoice };
}

/** The sum of an invoice's lines, as recorded when it was issued. */
async function linesSum(server: TestServer, invoiceId: string): Promise<number> {
  const { rows } = await server.pool.query<{ sum: string }>(
    'SELECT sum(amount_cents)::text AS sum FROM invoice_lines WHERE invoice_id = $1',
    [invoiceId],
  );
  return Number(rows[0]!.sum);
}

/** The text lines of the HTML page, as a reader sees them (tags dropped, entities read). */
function htmlLines(html: string): string[] {
  const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
  return html
    .replace(/<(style|title)>[^]*?<\/\1>/g, '')
    .split(/<[^>]+>/)
    .map((text) => text.replace(/&(amp|lt|gt|quot|#39);/g, (entity) => entities[entity]!).trim())
    .filter(Boolean);
}

interface Documents {
  html: string;
  /** The page's text lines and the PDF's, each in reading order. */
  page: string[];
  pdf: string[];
}

/** The invoice's page and PDF, opened from the links of the API's answer, without a credential. */
async function documentsOf(invoice: { hosted_invoice_url: string; invoice_pdf: string }): Promise<Documents> {
  const page = await fetch(invoice.hosted_invoice_url);
  expect(page.status).toBe(200);
  const html = await page.text();
  const pdf = await fetch(invoice.invoice_pdf);
  expect(pdf.status).toBe(200);
  return { html, page: htmlLines(html), pdf: pdfText(Buffer.from(await pdf.arrayBuffer())).split('\n') };
}

/** What both documents show right after `label` (a total's amount), or fails saying which lacks it. */
function amountAfter(documents: Documents, label: string): string {
  const after = (lines: string[]) => (lines.includes(label) ? lines[lines.indexOf(label) + 1] : undefined);
  const [page, pdf] = [after(documents.page), after(documents.pdf)];
  expect({ label, page, pdf }).toEqual({ label, page: pdf, pdf: page ?? 'missing on the page' });
  return page!;
}

/** The status both documents show (the page as a term and its description, the PDF as one line). */
function statusShown(documents: Documents): string {
  const page = documents.page[documents.page.indexOf('Status') + 1];
  const pdf = documents.pdf.find((line) => line.startsWith('Status: '))?.slice('Status: '.length);
  expect(page).toBe(pdf);
  return page!;
}

/** Both documents show every one of these lines. */
function expectBothShow(documents: Documents, lines: string[]) {
  for (const line of lines) {
    expect(documents.page, `the page shows ${JSON.stringify(line)}`).toContain(line);
    expect(documents.pdf, `the PDF shows ${JSON.stringify(line)}`).toContain(line);
  }
}

describe('a configured seller and 19% VAT', () => {
  const env = { ...SELLER, ...VAT_19 };
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ...env, TEST_CLOCKS: 'true' });
  });
  afterAll(() => server?.close());

  test('a paid invoice shows the seller, the buyer, the lines, the VAT on their sum, and the total as paid with nothing due', async () => {
    const { org, invoice } = await firstInvoice(server, env, 'Kestrel Analytics');
    const subtotal = await linesSum(server, invoice.id);
    expect(subtotal).toBeGreaterThan(0);
    // 19% of the lines' sum, rounded half up to the cent; the total the API gives includes it.
    const vat = Math.floor((subtotal * 19 + 50) / 100);
    expect(invoice).toMatchObject({ status: 'paid', total_cents: subtotal + vat, amount_due_cents: 0 });

    const documents = await documentsOf(invoice);
    expectBothShow(documents, [
      'From',
      'Nordwind Cloud GmbH',
      'Hafenstraße 7',
      '20457 Hamburg',
      'Germany',
      'VAT/tax id: DE812345678',
      'Email: billing@nordwind.example',
      'Billed to',
      'Kestrel Analytics',
      `Organization id: ${org.orgId}`,
      'Paid in full: nothing is due.',
    ]);
    expect(statusShown(documents)).toBe('Paid');
    expect(amountAfter(documents, 'Subtotal')).toBe(shown(subtotal));
    expect(amountAfter(documents, 'VAT (19%)')).toBe(shown(vat));
    expect(amountAfter(documents, 'Total')).toBe(shown(subtotal + vat));
    expect(amountAfter(documents, 'Amount paid')).toBe(shown(subtotal + vat));
    expect(amountAfter(documents, 'Amount due')).toBe('0.00');
    // No billing address is kept for an organization: none is invented for the buyer.
    const buyer = documents.page.slice(documents.page.indexOf('Billed to') + 1, documents.page.indexOf('Period'));
    expect(buyer).toEqual(['Kestrel Analytics', `Organization id: ${org.orgId}`]);
    // How amounts are rounded is said on both (the PDF wraps it over two lines).
    const rounding = "Each line's amount is rounded to the cent; the tax is computed once on the subtotal and rounded half up to the cent.";
    expect(documents.page.join(' ')).toContain(rounding);
    expect(documents.pdf.join(' ').replace(/\s+/g, ' ')).toContain(rounding);
  });

  test('a restart with nothing configured and a card that declines: the issued invoice keeps what it said; a new one is open, untaxed, and says the seller and the rate are not configured', async () => {
    const before = await firstInvoice(server, env, 'Heron Logistics');
    const documentsBefore = await documentsOf(before.invoice);
    await server.close();

    // The operator restarts on the same database without the seller or the tax, and every card declines.
    server = await startTestServer(
      { TEST_CLOCKS: 'true', SIM_FAULTS: 'billing.chargeCard=permanent' },
      { databaseUrl: server.databaseUrl },
    );
    const reread = await call(server.url, 'GET', `/v1/orgs/${before.org.orgId}/invoices/${before.invoice.id}`, {
      defaultKey: before.org.ownerKey,
    });
    expect(reread.status).toBe(200);
    expect(reread.body).toMatchObject({ status: 'paid', total_cents: before.invoice.total_cents, amount_due_cents: 0 });
    const documentsAfter = await documentsOf(reread.body);
    expect(documentsAfter.page).toEqual(documentsBefore.page);
    expect(documentsAfter.pdf).toEqual(documentsBefore.pdf);

    const { invoice } = await firstInvoice(server, { SIM_FAULTS: 'billing.chargeCard=permanent' }, 'Osprey Media');
    const subtotal = await linesSum(server, invoice.id);
    expect(invoice).toMatchObject({ status: 'open', total_cents: subtotal, amount_due_cents: subtotal });
    // Open invoices have their pages: the customer reads what to pay.
    const documents = await documentsOf(invoice);
    expectBothShow(documents, [
      'Seller details not configured.',
      'Osprey Media',
      'Payment is due: the amount due has not been collected yet.',
    ]);
    expect(statusShown(documents)).toBe('Open: awaiting payment');
    expect(documents.page.join('\n')).not.toContain('Nordwind');
    expect(amountAfter(documents, 'Subtotal')).toBe(shown(subtotal));
    expect(amountAfter(documents, 'Tax (0%) — no tax rate configured')).toBe('0.00');
    expect(amountAfter(documents, 'Total')).toBe(shown(subtotal));
    expect(amountAfter(documents, 'Amount paid')).toBe('0.00');
    expect(amountAfter(documents, 'Amount due')).toBe(shown(subtotal));
  });
});

describe('the tax: once per invoice, on the sum of its lines, rounded half up to the cent', () => {
  test.each([
    [250, 100, 3, "half a cent rounds up (banker's rounding would give 2)"],
    [350, 100, 4, 'half a cent rounds up from odd as from even'],
    [249, 100, 2, 'below half a cent rounds down'],
    [50, 100, 1, 'half a cent of nothing else is a cent'],
    [1000, 810, 81, 'a rate with a decimal place (8.1%) is exact'],
    [12345, 1900, 2346, '2345.55 cents'],
    [123456789012345, 1900, 23456789912346, 'exact where a float product would not be (beyond 2^53)'],
    [99999, 0, 0, 'a configured 0%'],
  ])('%i cents at %i basis points: %i (%s)', (subtotal, basisPoints, tax) => {
    expect(taxOn(subtotal, { name: 'VAT', basisPoints })).toBe(tax);
  });

  test('no rate configured: no tax', () => {
    expect(taxOn(12345, undefined)).toBe(0);
  });
});

describe('each status, the same on the page and in the PDF', () => {
  const documentIn = (status: string, paid: number, due: number): InvoiceDocument => ({
    invoice: {
      id: 'in_2026_05_0a1b2c3d',
      org_id: '0a1b2c3d-0000-4000-8000-000000000000',
      status: status as InvoiceDocument['invoice']['status'],
      currency: 'eur',
      total_cents: 11900,
      tax_cents: 1900,
      tax_name: 'VAT',
      tax_rate_basis_points: 1900,
      amount_paid_cents: paid,
      amount_due_cents: due,
      seller: { legal_name: 'Nordwind Cloud GmbH', address_lines: ['Hafenstraße 7'], tax_id: null, email: null },
      period_start: new Date('2026-05-01T00:00:00Z'),
      period_end: new Date('2026-06-01T00:00:00Z'),
      demo: false,
      issued_at: new Date('2026-06-01T00:05:00Z'),
      created_at: new Date('2026-06-01T00:05:00Z'),
    },
    organization: { id: '0a1b2c3d-0000-4000-8000-000000000000', name: 'Kestrel Analytics' },
    lines: [
      {
        position: 1,
        meter: 'vcpu_hour',
        description: 'Instance vCPU hours',
        quantity: '1666.666667',
        unit: 'hour',
        unit_amount_micro_eur: 6000,
        amount_cents: 10000,
      },
    ],
    instanceHours: [],
  });

  test.each([
    ['open', 0, 11900, 'Open: awaiting payment', 'Payment is due: the amount due has not been collected yet.'],
    ['open', 5000, 6900, 'Open: awaiting payment', 'Payment is due: the amount due has not been collected yet.'],
    ['paid', 11900, 0, 'Paid', 'Paid in full: nothing is due.'],
    ['void', 0, 0, 'Void', 'This invoice was cancelled: nothing is due.'],
    ['uncollectible', 0, 11900, 'Uncollectible', 'Collecting the amount due has failed; it is written off as uncollectible.'],
  ])('%s, %i paid and %i due', async (status, paid, due, statusWords, note) => {
    const document = documentIn(status, paid, due);
    const documents = {
      html: '',
      page: htmlLines(renderInvoiceHtml(document)),
      pdf: pdfText(await renderInvoicePdf(document)).split('\n'),
    };
    expect(amountAfter(documents, 'Total')).toBe('119.00');
    expect(amountAfter(documents, 'Amount paid')).toBe(shown(paid));
    expect(amountAfter(documents, 'Amount due')).toBe(shown(due));
    expect(statusShown(documents)).toBe(statusWords);
    expectBothShow(documents, [note, 'Nordwind Cloud GmbH', 'Hafenstraße 7', 'VAT/tax id: not configured', 'Email: not configured']);
  });
});

describe('the configuration of invoices', () => {
  test('nothing set: no seller, no tax rate', () => {
    expect(loadConfig({}).invoicing).toEqual({
      seller: { legalName: undefined, addressLines: [], taxId: undefined, email: undefined },
      tax: undefined,
    });
  });

  test('the seller and the rate, read exactly', () => {
    expect(loadConfig({ ...SELLER, INVOICE_TAX_RATE: '8.1' }).invoicing).toEqual({
      seller: {
        legalName: 'Nordwind Cloud GmbH',
        addressLines: ['Hafenstraße 7', '20457 Hamburg', 'Germany'],
        taxId: 'DE812345678',
        email: 'billing@nordwind.example',
      },
      tax: { name: 'Tax', basisPoints: 810 },
    });
    expect(loadConfig({ INVOICE_TAX_RATE: '0', INVOICE_TAX_NAME: 'GST' }).invoicing.tax).toEqual({ name: 'GST', basisPoints: 0 });
  });

  test.each([
    [
      { INVOICE_TAX_RATE: '19%' },
      'INVOICE_TAX_RATE must be a percentage from 0 to 100 with at most two decimal places (19, 8.1), not "19%"',
    ],
    [
      { INVOICE_TAX_RATE: '100.5' },
      'INVOICE_TAX_RATE must be a percentage from 0 to 100 with at most two decimal places (19, 8.1), not "100.5"',
    ],
    [
      { INVOICE_TAX_RATE: '7.125' },
      'INVOICE_TAX_RATE must be a percentage from 0 to 100 with at most two decimal places (19, 8.1), not "7.125"',
    ],
    [{ INVOICE_TAX_NAME: 'VAT' }, 'INVOICE_TAX_NAME is set but INVOICE_TAX_RATE is not: set the rate too (0 for none)'],
    [{ INVOICE_SELLER_TAX_ID: 'DE812345678' }, 'INVOICE_SELLER_NAME is required when INVOICE_SELLER_TAX_ID is set'],
    [{ ...SELLER, INVOICE_SELLER_EMAIL: 'billing' }, 'INVOICE_SELLER_EMAIL must be an email address, not "billing"'],
    [
      { ...SELLER, INVOICE_SELLER_ADDRESS: 'Hafenstraße 7;; Hamburg' },
      'INVOICE_SELLER_ADDRESS must be 1 to 8 non-empty lines separated by ";", not "Hafenstraße 7;; Hamburg"',
    ],
    [
      { ...SELLER, INVOICE_SELLER_TAX_ID: 'DE 812<b>' },
      'INVOICE_SELLER_TAX_ID must be 2 to 31 letters, digits, spaces, ".", "/" or "-" (DE123456789), not "DE 812<b>"',
    ],
    [
      { ...SELLER, INVOICE_SELLER_NAME: 'Норд Cloud' },
      "INVOICE_SELLER_NAME has a character invoices cannot print (U+041D): the PDF's font covers Western European (Windows-1252) text",
    ],
  ])('refuses %o at start-up', (env, message) => {
    expect(() => loadConfig(env)).toThrow(new ConfigError(message));
  });
});
