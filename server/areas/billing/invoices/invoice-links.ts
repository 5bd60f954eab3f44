import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../../../db/pool.ts';

export type InvoiceFormat = 'html' | 'pdf';

/** Where invoice pages are served (outside /v1): `/billing/invoices/<id>.html` and `.pdf`. */
export const INVOICE_DOCUMENTS_PATH = '/billing/invoices/';

/**
 * Signed, expiring links to an invoice's page and PDF, so that a browser opens them without an
 * API key: an HMAC-SHA256 (key made once by the platform, kept in the database and shared by its
 * processes) over the organization, the invoice, the format and the expiry. Expiry is rounded up
 * to the hour, so that reads within the same hour hand out the same link.
 */
export interface InvoiceLinks {
  url(orgId: string, invoiceId: string, format: InvoiceFormat): string;
  verify(orgId: string, invoiceId: string, format: InvoiceFormat, expires: string, signature: string): 'valid' | 'expired' | 'invalid';
}

const HOUR = 3600;

export async function invoiceLinkKey(db: Queryable): Promise<Buffer> {
  await db.query(`INSERT INTO platform_secrets (name, secret) VALUES ('invoice_links', $1) ON CONFLICT (name) DO NOTHING`, [
    randomBytes(32),
  ]);
  const { rows } = await db.query<{ secret: Buffer }>(`SELECT secret FROM platform_secrets WHERE name = 'invoice_links'`);
  return rows[0]!.secret;
}

export function createInvoiceLinks(key: Buffer, options: { baseUrl: string; ttlSeconds: number; now?: () => number }): InvoiceLinks {
  const now = options.now ?? Date.now;
  const sign = (orgId: string, invoiceId: string, format: InvoiceFormat, expires: string) =>
    createHmac('sha256', key).update(`${orgId}\n${invoiceId}\n${format}\n${expires}`).digest('base64url');
  return {
    url(orgId, invoiceId, format) {
      const expires = String(Math.ceil((now() / 1000 + options.ttlSeconds) / HOUR) * HOUR);
      const signature = sign(orgId, invoiceId, format, expires);
      return `${options.baseUrl}${INVOICE_DOCUMENTS_PATH}${invoiceId}.${format}?expires=${expires}&signature=${signature}`;
    },
    verify(orgId, invoiceId, format, expires, signature) {
      if (!/^\d{1,12}$/.test(expires)) return 'invalid';
      const expected = Buffer.from(sign(orgId, invoiceId, format, expires));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
      return Number(expires) * 1000 <= now() ? 'expired' : 'valid';
    },
  };
}

/** The links of this platform, made once the signing key is read (lazily: the first invoice read). */
export function invoiceLinkSource(db: Queryable, options: { baseUrl: () => string; ttlSeconds: number }): () => Promise<InvoiceLinks> {
  let key: Promise<Buffer> | undefined;
  return async () => {
    key ??= invoiceLinkKey(db).catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    return createInvoiceLinks(await key, { baseUrl: options.baseUrl(), ttlSeconds: options.ttlSeconds });
  };
}
