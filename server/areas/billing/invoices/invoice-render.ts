import type { InvoiceDocument, InvoiceRow } from './invoice-rows.ts';
import type { StoredSeller } from './invoice-terms.ts';

const STATUS_WORDS: Record<string, string> = {
  draft: 'Draft',
  open: 'Open: awaiting payment',
  paid: 'Paid',
  void: 'Void',
  uncollectible: 'Uncollectible',
};

/** What the amounts mean in each status, said under them. Drafts have no documents yet. */
const STATUS_NOTES: Record<string, string> = {
  open: 'Payment is due: the amount due has not been collected yet.',
  paid: 'Paid in full: nothing is due.',
  void: 'This invoice was cancelled: nothing is due.',
  uncollectible: 'Collecting the amount due has failed; it is written off as uncollectible.',
};

const DEMO_NOTE =
  'Demo data: this invoice bills invented usage of a demonstration organization. Its payment is simulated: nothing was charged.';

const UNIT_WORDS: Record<string, string> = { hour: 'h', gb_hour: 'GB-h', gb_month: 'GB-month', gb: 'GB' };

/** Cents as an amount of the currency: `1234` → `12.34`. */
export function money(cents: number): string {
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** A decimal quantity as shown: up to 3 decimal places, trailing zeros dropped. */
export function quantityText(quantity: string): string {
  const [whole = '0', fraction = ''] = quantity.split('.');
  const shown = fraction.slice(0, 3).replace(/0+$/, '');
  return shown ? `${whole}.${shown}` : whole;
}

/** A unit price in millionths of a euro, as euros with as many places as it needs (at least 2). */
export function unitPrice(microEur: number): string {
  const whole = Math.floor(microEur / 1_000_000);
  const fraction = String(microEur % 1_000_000)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}

/** A rate in hundredths of a percent as a percentage: `1900` → `19%`, `810` → `8.1%`. */
export function percent(basisPoints: number): string {
  const fraction = String(basisPoints % 100)
    .padStart(2, '0')
    .replace(/0+$/, '');
  return `${Math.floor(basisPoints / 100)}${fraction ? `.${fraction}` : ''}%`;
}

const monthName = (date: Date) => date.toLocaleString('en-GB', { month: 'long', year: 'numeric', timeZone: 'UTC' });
const day = (date: Date) => date.toISOString().slice(0, 10);

/** The seller as the invoice recorded it when issued; what was not configured is said, never invented. */
function sellerLines(seller: StoredSeller | null): string[] {
  if (!seller) return ['Seller details not configured.'];
  return [
    seller.legal_name,
    ...(seller.address_lines.length > 0 ? seller.address_lines : ['Address: not configured']),
    `VAT/tax id: ${seller.tax_id ?? 'not configured'}`,
    `Email: ${seller.email ?? 'not configured'}`,
  ];
}

/** One line of the totals: what it is, its amount, and the HTML id tests and scripts find it by. */
interface Amount {
  label: string;
  cents: number;
  id: 'subtotal' | 'tax' | 'total' | 'amount-paid' | 'amount-due';
  /** A part of the total (subtotal, tax), shown lighter than the total and what was paid and is due. */
  part: boolean;
}

/**
 * The totals as the invoice recorded them: the lines' sum, the tax at the rate of the day it was
 * issued (or none, said so), the total the provider was asked to collect, what it collected and
 * what remains due.
 */
function amounts(invoice: InvoiceRow): Amount[] {
  const taxLabel =
    invoice.tax_rate_basis_points === null
      ? 'Tax (0%) — no tax rate configured'
      : `${invoice.tax_name ?? 'Tax'} (${percent(invoice.tax_rate_basis_points)})`;
  return [
    { label: 'Subtotal', cents: invoice.total_cents - invoice.tax_cents, id: 'subtotal', part: true },
    { label: taxLabel, cents: invoice.tax_cents, id: 'tax', part: true },
    { label: 'Total', cents: invoice.total_cents, id: 'total', part: false },
    { label: 'Amount paid', cents: invoice.amount_paid_cents, id: 'amount-paid', part: false },
    { label: 'Amount due', cents: invoice.amount_due_cents, id: 'amount-due', part: false },
  ];
}

/** The facts both renderings show, in reading order. */
function summary(document: InvoiceDocument) {
  const { invoice, organization } = document;
  const lastDay = new Date(invoice.period_end.getTime() - 86_400_000);
  const currency = invoice.currency.toUpperCase();
  return {
    title: `Invoice ${invoice.id}`,
    seller: sellerLines(invoice.seller),
    buyer: [organization.name, `Organization id: ${organization.id}`],
    period: `${monthName(invoice.period_start)} (${day(invoice.period_start)} to ${day(lastDay)}, UTC)`,
    currency,
    status: STATUS_WORDS[invoice.status] ?? invoice.status,
    issued: invoice.issued_at ? day(invoice.issued_at) : day(invoice.created_at),
    demo: invoice.demo,
    amounts: amounts(invoice),
    statusNote: STATUS_NOTES[invoice.status] ?? '',
    finePrint:
      `Prices are per unit in ${currency}; a GB is 2^30 bytes. Each line's amount is rounded to the cent; ` +
      `the tax is computed once on the subtotal and rounded half up to the cent.`,
  };
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** The invoice as a self-contained HTML page (no scripts, no outside resources). */
export function renderInvoiceHtml(document: InvoiceDocument): string {
  const facts = summary(document);
  const totals = facts.amounts
    .map(
      (amount) =>
        `<tr${amount.part ? ' class="part"' : ''}><td colspan="3">${escapeHtml(amount.label)}</td><td class="num" id="${amount.id}">${money(amount.cents)}</td></tr>`,
    )
    .join('\n');
  const rows = document.lines
    .map(
      (line) =>
        `<tr><td>${escapeHtml(line.description)}</td><td class="num">${quantityText(line.quantity)} ${UNIT_WORDS[line.unit] ?? line.unit}</td>` +
        `<td class="num">${unitPrice(line.unit_amount_micro_eur)}</td><td class="num">${money(line.amount_cents)}</td></tr>`,
    )
    .join('\n');
  const sizes = document.instanceHours
    .map((size) => `<tr><td>${escapeHtml(size.size)}</td><td class="num">${quantityText(size.hours)} h</td></tr>`)
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(facts.title)}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; color: #222; max-width: 820px; margin: 32px auto; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
table { width: 100%; border-collapse: collapse; margin: 16px 0; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #ddd; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
tfoot td { font-weight: 600; border-bottom: none; }
tfoot tr.part td { font-weight: normal; }
.demo { background: #fff3cd; border: 1px solid #e0c36a; padding: 8px 12px; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dt { color: #666; }
.parties { display: flex; gap: 48px; margin: 16px 0; }
.parties h2 { font-size: 13px; text-transform: uppercase; color: #666; margin: 0 0 4px; }
.parties p { margin: 0; }
</style>
</head>
<body>
<h1>${escapeHtml(facts.title)}</h1>
${facts.demo ? `<p class="demo">${escapeHtml(DEMO_NOTE)}</p>` : ''}
<div class="parties">
<section id="seller"><h2>From</h2><p>${facts.seller.map(escapeHtml).join('<br>')}</p></section>
<section id="buyer"><h2>Billed to</h2><p>${facts.buyer.map(escapeHtml).join('<br>')}</p></section>
</div>
<dl>
<dt>Period</dt><dd>${escapeHtml(facts.period)}</dd>
<dt>Issued</dt><dd>${facts.issued}</dd>
<dt>Status</dt><dd>${escapeHtml(facts.status)}</dd>
</dl>
<table>
<thead><tr><th>Description</th><th class="num">Quantity</th><th class="num">Unit price (${facts.currency})</th><th class="num">Amount (${facts.currency})</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="4">No usage.</td></tr>'}
</tbody>
<tfoot>
${totals}
</tfoot>
</table>
${facts.statusNote ? `<p id="status-note">${escapeHtml(facts.statusNote)}</p>` : ''}
${sizes ? `<h2>Instance hours by size</h2>\n<table>\n<tbody>\n${sizes}\n</tbody>\n</table>` : ''}
<p>${escapeHtml(facts.finePrint)}</p>
</body>
</html>
`;
}

/**
 * The invoice as a PDF (pdfkit, its built-in Helvetica: nothing is fetched). pdfkit is loaded on
 * the first PDF asked for, not at start: it is the heaviest module the server uses (about 0.2 s).
 */
export async function renderInvoicePdf(document: InvoiceDocument): Promise<Buffer> {
  const { default: PDFDocument } = await import('pdfkit');
  const facts = summary(document);
  const pdf = new PDFDocument({ size: 'A4', margin: 56, info: { Title: facts.title, Author: 'Cloud Platform' } });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    pdf.on('data', (chunk: Buffer) => chunks.push(chunk));
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });
  pdf.font('Helvetica-Bold').fontSize(18).text(facts.title);
  pdf.moveDown(0.5);
  if (facts.demo) {
    pdf.font('Helvetica-Bold').fontSize(10).fillColor('#8a6d00').text(DEMO_NOTE);
    pdf.fillColor('black').moveDown(0.5);
  }
  // The seller and the buyer side by side, as on the page.
  const partiesTop = pdf.y;
  const party = (heading: string, lines: string[], x: number, width: number) => {
    pdf.font('Helvetica-Bold').fontSize(9).text(heading, x, partiesTop, { width });
    pdf.font('Helvetica').fontSize(10);
    for (const line of lines) pdf.text(line, x, pdf.y, { width });
    return pdf.y;
  };
  const sellerBottom = party('From', facts.seller, 56, 200);
  // Wide enough for "Organization id: <uuid>" on one line (about 265 points).
  const buyerBottom = party('Billed to', facts.buyer, 270, 269);
  pdf.x = 56;
  pdf.y = Math.max(sellerBottom, buyerBottom);
  pdf.moveDown();
  pdf.text(`Period: ${facts.period}`);
  pdf.text(`Issued: ${facts.issued}`);
  pdf.text(`Status: ${facts.status}`);
  pdf.moveDown();

  const columns = [56, 300, 400, 480];
  const row = (cells: string[], bold = false) => {
    const y = pdf.y;
    pdf.font(bold ? 'Helvetica-Bold' : 'Helvetica');
    cells.forEach((cell, index) => {
      const x = columns[index]!;
      const width = index === 0 ? 240 : 75;
      pdf.text(cell, x, y, { width, align: index === 0 ? 'left' : 'right', lineBreak: false });
    });
    pdf.x = 56;
    pdf.y = y + 16;
  };
  row(['Description', 'Quantity', `Unit (${facts.currency})`, `Amount (${facts.currency})`], true);
  for (const line of document.lines) {
    row([
      line.description,
      `${quantityText(line.quantity)} ${UNIT_WORDS[line.unit] ?? line.unit}`,
      unitPrice(line.unit_amount_micro_eur),
      money(line.amount_cents),
    ]);
  }
  if (document.lines.length === 0) row(['No usage.', '', '', '']);
  pdf.moveDown(0.5);
  for (const amount of facts.amounts) row([amount.label, '', '', money(amount.cents)], !amount.part);
  if (facts.statusNote) {
    pdf.moveDown(0.5);
    pdf.font('Helvetica').text(facts.statusNote, 56);
  }
  if (document.instanceHours.length > 0) {
    pdf.moveDown();
    pdf.font('Helvetica-Bold').text('Instance hours by size', 56);
    for (const size of document.instanceHours) row([size.size, `${quantityText(size.hours)} h`, '', '']);
  }
  pdf.moveDown();
  pdf.font('Helvetica').fontSize(8).text(facts.finePrint, 56);
  pdf.end();
  return done;
}
