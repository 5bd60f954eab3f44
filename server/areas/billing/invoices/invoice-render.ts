import type { InvoiceDocument } from './invoice-rows.ts';

const STATUS_WORDS: Record<string, string> = {
  draft: 'Draft',
  open: 'Open: awaiting payment',
  paid: 'Paid',
  void: 'Void',
  uncollectible: 'Uncollectible',
};

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

const monthName = (date: Date) => date.toLocaleString('en-GB', { month: 'long', year: 'numeric', timeZone: 'UTC' });
const day = (date: Date) => date.toISOString().slice(0, 10);

/** The facts both renderings show, in reading order. */
function summary(document: InvoiceDocument) {
  const { invoice } = document;
  const lastDay = new Date(invoice.period_end.getTime() - 86_400_000);
  return {
    title: `Invoice ${invoice.id}`,
    period: `${monthName(invoice.period_start)} (${day(invoice.period_start)} to ${day(lastDay)}, UTC)`,
    currency: invoice.currency.toUpperCase(),
    status: STATUS_WORDS[invoice.status] ?? invoice.status,
    issued: invoice.issued_at ? day(invoice.issued_at) : day(invoice.created_at),
    demo: invoice.demo,
  };
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** The invoice as a self-contained HTML page (no scripts, no outside resources). */
export function renderInvoiceHtml(document: InvoiceDocument): string {
  const facts = summary(document);
  const { invoice } = document;
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
.demo { background: #fff3cd; border: 1px solid #e0c36a; padding: 8px 12px; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dt { color: #666; }
</style>
</head>
<body>
<h1>${escapeHtml(facts.title)}</h1>
${facts.demo ? '<p class="demo">Demo data: this invoice bills invented usage of a demonstration organization. Nothing was charged.</p>' : ''}
<dl>
<dt>Billed to</dt><dd>${escapeHtml(document.organization.name)} (${document.organization.id})</dd>
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
<tr><td colspan="3">Total</td><td class="num" id="total">${money(Number(invoice.total_cents))}</td></tr>
<tr><td colspan="3">Amount due</td><td class="num" id="amount-due">${money(Number(invoice.amount_due_cents))}</td></tr>
</tfoot>
</table>
${sizes ? `<h2>Instance hours by size</h2>\n<table>\n<tbody>\n${sizes}\n</tbody>\n</table>` : ''}
<p>Prices are per unit in ${facts.currency}; a GB is 2<sup>30</sup> bytes; amounts are rounded to the cent per line.</p>
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
  const { invoice } = document;
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
    pdf.font('Helvetica-Bold').fontSize(10).fillColor('#8a6d00').text('Demo data: this invoice bills invented usage. Nothing was charged.');
    pdf.fillColor('black').moveDown(0.5);
  }
  pdf.font('Helvetica').fontSize(10);
  pdf.text(`Billed to: ${document.organization.name} (${document.organization.id})`);
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
  row(['Total', '', '', money(Number(invoice.total_cents))], true);
  row(['Amount due', '', '', money(Number(invoice.amount_due_cents))], true);
  if (document.instanceHours.length > 0) {
    pdf.moveDown();
    pdf.font('Helvetica-Bold').text('Instance hours by size', 56);
    for (const size of document.instanceHours) row([size.size, `${quantityText(size.hours)} h`, '', '']);
  }
  pdf.moveDown();
  pdf
    .font('Helvetica')
    .fontSize(8)
    .text(`Prices per unit in ${facts.currency}; a GB is 2^30 bytes; amounts rounded to the cent per line.`, 56);
  pdf.end();
  return done;
}
