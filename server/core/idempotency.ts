import { createHash } from 'node:crypto';
import { stringify } from 'lossless-json';
import type { Pool, Queryable } from '../db/pool.ts';

/** How long a claimed key stays locked while its request runs; then a retry may take it over. */
const PROCESSING_LOCK_SECONDS = 60;

export type Claim = { kind: 'claimed' } | { kind: 'replay'; status: number; body: string } | { kind: 'reused' } | { kind: 'in_use' };

/**
 * Idempotency-Key records (docs/architecture.md, "Lists and retries"): the same key and request replay the stored response;
 * the same key with another request is refused; a key whose first request still runs is
 * `in_use`. Claiming is one INSERT … ON CONFLICT DO NOTHING, so of two simultaneous requests
 * with one key exactly one runs. The record is completed in the transaction of the change, so a
 * crash either leaves nothing (and the key is taken over once its lock lapses) or leaves the
 * change and its stored response together.
 */
export async function claimKey(pool: Pool, orgId: string, key: string, fingerprint: Buffer): Promise<Claim> {
  // Named: parsed and planned once per connection, as every creating request claims a key.
  const inserted = await pool.query({
    name: 'idempotency-key-claim',
    text: `INSERT INTO idempotency_keys (org_id, key, fingerprint, state, locked_until)
           VALUES ($1, $2, $3, 'processing', now() + make_interval(secs => $4))
           ON CONFLICT (org_id, key) DO NOTHING`,
    values: [orgId, key, fingerprint, PROCESSING_LOCK_SECONDS],
  });
  if (inserted.rowCount === 1) return { kind: 'claimed' };
  const { rows } = await pool.query<{
    fingerprint: Buffer;
    state: string;
    response_status: number | null;
    response_body: string | null;
    lock_lapsed: boolean;
  }>(
    `SELECT fingerprint, state, response_status, response_body, locked_until < now() AS lock_lapsed
     FROM idempotency_keys WHERE org_id = $1 AND key = $2`,
    [orgId, key],
  );
  const record = rows[0];
  if (!record) return claimKey(pool, orgId, key, fingerprint);
  if (!record.fingerprint.equals(fingerprint)) return { kind: 'reused' };
  if (record.state === 'completed') return { kind: 'replay', status: record.response_status!, body: record.response_body! };
  if (!record.lock_lapsed) return { kind: 'in_use' };
  const takenOver = await pool.query(
    `UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => $3)
     WHERE org_id = $1 AND key = $2 AND state = 'processing' AND locked_until < now()`,
    [orgId, key, PROCESSING_LOCK_SECONDS],
  );
  return takenOver.rowCount === 1 ? { kind: 'claimed' } : { kind: 'in_use' };
}

/** The stored form of a response to replay: its body as written ('' for none). */
export const storedBody = (body: unknown): string => (body === undefined ? '' : stringify(body)!);

/**
 * Stores the response to replay. Secrets shown once must already be removed from `body`. (A
 * successful change completes its key with its audit event instead: core/audit.ts.)
 */
export async function completeKey(db: Queryable, orgId: string, key: string, status: number, body: unknown): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys SET state = 'completed', locked_until = NULL, response_status = $3, response_body = $4
     WHERE org_id = $1 AND key = $2`,
    [orgId, key, status, storedBody(body)],
  );
}

/** Forgets a claim whose request failed on our side, so that a retry runs again. */
export async function releaseKey(db: Queryable, orgId: string, key: string): Promise<void> {
  await db.query(`DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2 AND state = 'processing'`, [orgId, key]);
}

/** Keys are kept at least 24 hours; older ones are purged. */
export async function purgeExpiredKeys(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '25 hours'`);
  return rowCount ?? 0;
}

/** What makes two requests "the same": operation, path parameters and body, key order aside. */
export function fingerprintOf(operationId: string, params: Record<string, string>, body: unknown): Buffer {
  return createHash('sha256')
    .update(stringify(canonical({ operationId, params, body })) ?? '')
    .digest();
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
