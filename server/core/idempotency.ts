import { createHash, randomUUID } from 'node:crypto';
import { stringify } from 'lossless-json';
import type { Pool, Queryable } from '../db/pool.ts';
import { PROCESS_ALIVE } from '../db/process-liveness.ts';

/**
 * How long a claimed key stays locked while its request runs, when the process that claimed it
 * cannot be asked (one of an earlier version): then a retry may take it over.
 */
const PROCESSING_LOCK_SECONDS = 60;

/** Who claims a key: this server process (see db/process-liveness.ts). */
export interface KeyHolder {
  /** The process's instance number, whose advisory lock says it is alive. */
  instance: number;
}

export type Claim =
  { kind: 'claimed'; claim: string } | { kind: 'replay'; status: number; body: string } | { kind: 'reused' } | { kind: 'in_use' };

/**
 * Idempotency-Key records (decisions.md): the same key and request replay the stored response;
 * the same key with another request is refused; a key whose first request still runs is
 * `in_use`. Claiming is one INSERT … ON CONFLICT DO NOTHING, so of two simultaneous requests
 * with one key exactly one runs. The record is completed in the transaction of the change, so a
 * crash either leaves nothing or leaves the change and its stored response together.
 *
 * A claim names its process and itself. A key whose process is known dead (its lock gone with
 * its database session: killed, crashed) is taken over at once by the next request with it;
 * otherwise it stays in use until the request completes or releases it (or, for a process that
 * cannot be asked, until its lock lapses). The takeover replaces the claim, and a request whose
 * claim was replaced cannot complete the key (complete_idempotency_key, migration 0991): its
 * change is rolled back, so however a process was wrongly taken for dead, one request's change
 * stands.
 */
export async function claimKey(pool: Pool, holder: KeyHolder, orgId: string, key: string, fingerprint: Buffer): Promise<Claim> {
  const claim = randomUUID();
  // Named: parsed and planned once per connection, as every creating request claims a key.
  const inserted = await pool.query({
    name: 'idempotency-key-claim',
    text: `INSERT INTO idempotency_keys (org_id, key, fingerprint, state, locked_until, holder, claim)
           VALUES ($1, $2, $3, 'processing', now() + make_interval(secs => $4), $5, $6)
           ON CONFLICT (org_id, key) DO NOTHING`,
    values: [orgId, key, fingerprint, PROCESSING_LOCK_SECONDS, holder.instance, claim],
  });
  if (inserted.rowCount === 1) return { kind: 'claimed', claim };
  const { rows } = await pool.query<{
    fingerprint: Buffer;
    state: string;
    response_status: number | null;
    response_body: string | null;
    claim: string | null;
    orphaned: boolean;
  }>(
    `SELECT fingerprint, state, response_status, response_body, claim,
       (locked_until < now() OR (holder IS NOT NULL AND NOT ${PROCESS_ALIVE('holder')})) AS orphaned
     FROM idempotency_keys WHERE org_id = $1 AND key = $2`,
    [orgId, key],
  );
  const record = rows[0];
  if (!record) return claimKey(pool, holder, orgId, key, fingerprint);
  if (!record.fingerprint.equals(fingerprint)) return { kind: 'reused' };
  if (record.state === 'completed') return { kind: 'replay', status: record.response_status!, body: record.response_body! };
  if (!record.orphaned) return { kind: 'in_use' };
  // Taken over only from the claim that was seen orphaned: of two requests taking it over, one does.
  const takenOver = await pool.query(
    `UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => $3), holder = $4, claim = $5
     WHERE org_id = $1 AND key = $2 AND state = 'processing' AND claim IS NOT DISTINCT FROM $6`,
    [orgId, key, PROCESSING_LOCK_SECONDS, holder.instance, claim, record.claim],
  );
  return takenOver.rowCount === 1 ? { kind: 'claimed', claim } : { kind: 'in_use' };
}

/** The key a request claimed, and its claim. */
export interface ClaimedKey {
  key: string;
  claim: string;
}

/** The stored form of a response to replay: its body as written ('' for none). */
export const storedBody = (body: unknown): string => (body === undefined ? '' : stringify(body)!);

/**
 * Stores the response to replay. Secrets shown once must already be removed from `body`. (A
 * successful change completes its key with its audit event instead: core/audit.ts.)
 */
export async function completeKey(db: Queryable, orgId: string, claimed: ClaimedKey, status: number, body: unknown): Promise<void> {
  // Only the request's own claim: one taken over meanwhile belongs to the request that took it.
  await db.query(
    `UPDATE idempotency_keys SET state = 'completed', locked_until = NULL, response_status = $4, response_body = $5
     WHERE org_id = $1 AND key = $2 AND claim = $3`,
    [orgId, claimed.key, claimed.claim, status, storedBody(body)],
  );
}

/** Forgets a claim whose request failed on our side, so that a retry runs again (only this request's claim). */
export async function releaseKey(db: Queryable, orgId: string, claimed: ClaimedKey): Promise<void> {
  await db.query(`DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2 AND state = 'processing' AND claim = $3`, [
    orgId,
    claimed.key,
    claimed.claim,
  ]);
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
