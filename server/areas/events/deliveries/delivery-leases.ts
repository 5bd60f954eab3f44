import type { EventsConfig } from '../../../config.ts';
import type { Pool, PoolClient } from '../../../db/pool.ts';
import type { EventRow } from '../events/event-rows.ts';
import type { EndpointRow } from '../webhook-endpoints/endpoint-rows.ts';
import { prepared, runGeneric, type PreparedStatement } from '../../../db/statements.ts';
import type { ClaimedDelivery } from './delivery-attempt.ts';

/**
 * Announced when a delivery is due (the fan-out trigger, a resend, a ping) or attempts are
 * recorded (their slots are free); the deliverer that recorded them names itself (its token), and
 * has claimed the free slots already.
 */
export const DELIVERIES_DUE_CHANNEL = 'webhook_deliveries_due';

/** Advisory lock of a claim: one process at a time counts the endpoints' free slots and fills them. */
const CLAIM_LOCK = 7_361_204_131;

/**
 * The deliveries due now, oldest first, within three limits that keep a slow or hostile receiver
 * from costing anyone else: at most `endpointConcurrency` attempts under way per endpoint,
 * `orgConcurrency` per organization, and `maxInFlight` in all, across processes. A few per
 * endpoint, so that an endpoint with a long backlog never holds back another; a share per
 * organization, so that one organization's slow receivers (each attempt may take the whole
 * timeout) never hold every slot while other organizations' deliveries wait. Each is leased to
 * the claiming deliverer in the same statement, and comes back with its event and its endpoint
 * (read through jsonb: one row each).
 * Only the endpoints with a delivery scheduled are looked at (`scheduled`: one step through the
 * index of scheduled deliveries per such endpoint), not every endpoint of every organization:
 * with 2,000 endpoints of which 3 had deliveries, a claim took 25.6 ms that way, 0.6 ms this way.
 * Prepared, with the process's limits and lease written into its text, and run on its generic
 * plan (`runGeneric`): planning it took about 1.1 ms a claim, most of a claim's cost
 * (pg_stat_statements, a claim for every three or four deliveries). With the limits as parameters
 * the generic plan ran ten times slower than the plan made for each claim's values; with them as
 * constants, it is that plan (only the token, which no plan depends on, is a parameter). The
 * claimed deliveries are updated by id, through the primary key, not joined to `due`: the planner
 * guesses `due`'s size from the endpoints (155 rows for 4), and for that many it read the whole
 * table of deliveries, which keeps every past one (8,557 rows, 3.9 ms, for each claim of a few
 * deliveries, in the events bench).
 */
export function claimStatement({ endpointConcurrency, maxInFlight, orgConcurrency, leaseMs }: ClaimLimits): PreparedStatement {
  // Written into the statement's text: whole numbers only.
  for (const value of [endpointConcurrency, maxInFlight, orgConcurrency, leaseMs])
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`a webhook claim's limits are whole numbers, not ${value}`);
  return prepared(
    `webhook_deliveries_claim_${endpointConcurrency}_${maxInFlight}_${orgConcurrency}_${leaseMs}`,
    claimText(endpointConcurrency, maxInFlight, orgConcurrency, leaseMs),
  );
}

/** What a claim is limited by: `EventsConfig`'s three limits, and the lease it gives. */
export interface ClaimLimits {
  endpointConcurrency: number;
  maxInFlight: number;
  orgConcurrency: number;
  leaseMs: number;
}

const claimText = (endpointConcurrency: number, maxInFlight: number, orgConcurrency: number, leaseMs: number) => `
  WITH RECURSIVE scheduled (endpoint_id) AS (
    (SELECT endpoint_id FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
            WHERE d.next_attempt_at IS NOT NULL AND d.endpoint_id > s.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
    FROM scheduled s WHERE s.endpoint_id IS NOT NULL),
  busy AS (SELECT count(*)::int AS n FROM webhook_deliveries WHERE in_flight),
  within_endpoints AS (
    SELECT due.id, w.org_id, due.next_attempt_at FROM scheduled s
    JOIN webhook_endpoints w ON w.id = s.endpoint_id
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM webhook_deliveries f WHERE f.org_id = w.org_id AND f.endpoint_id = s.endpoint_id AND f.in_flight) slots
    CROSS JOIN LATERAL (
      SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
      WHERE d.endpoint_id = s.endpoint_id AND d.next_attempt_at <= now()
      ORDER BY d.next_attempt_at LIMIT greatest(0, ${endpointConcurrency} - slots.n)) due),
  org_slots AS (
    SELECT o.org_id, ${orgConcurrency} - (SELECT count(*)::int FROM webhook_deliveries f WHERE f.org_id = o.org_id AND f.in_flight) AS free
    FROM (SELECT DISTINCT org_id FROM within_endpoints) o),
  due AS (
    SELECT ranked.id, ranked.next_attempt_at FROM (
      SELECT c.id, c.org_id, c.next_attempt_at, row_number() OVER (PARTITION BY c.org_id ORDER BY c.next_attempt_at) AS rank
      FROM within_endpoints c) ranked
    JOIN org_slots o ON o.org_id = ranked.org_id
    WHERE ranked.rank <= o.free
    ORDER BY ranked.next_attempt_at
    LIMIT greatest(0, ${maxInFlight} - (SELECT n FROM busy))),
  claimed AS (
    UPDATE webhook_deliveries d SET next_attempt_at = NULL, in_flight = true,
      lease_token = $1, lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE d.id = ANY (ARRAY(SELECT id FROM due))
    RETURNING d.id, d.event_id, d.endpoint_id)
  SELECT c.id, to_jsonb(e) AS event, to_jsonb(w) AS endpoint
  FROM claimed c JOIN events e ON e.id = c.event_id JOIN webhook_endpoints w ON w.id = c.endpoint_id`;

/** Deliveries whose deliverer stopped renewing their lease (its process died) are due again. */
const LAPSED = `
  UPDATE webhook_deliveries SET in_flight = false, lease_token = NULL, lease_expires_at = NULL, next_attempt_at = now()
  WHERE in_flight AND lease_expires_at <= now()`;

export interface DeliveryLeases {
  /**
   * Claims the deliveries due now for `token` in the caller's transaction, which began with
   * `lock` (so that, in a transaction that records attempts too, a claim never waits for rows
   * another holds while holding them itself). First makes those with a lapsed lease due, when
   * `reclaimLapsed`.
   */
  claim(tx: PoolClient, token: string, reclaimLapsed: boolean): Promise<ClaimedDelivery[]>;
  /** Takes the claims' lock: the first statement of a transaction that records attempts and claims. */
  lock(tx: PoolClient): Promise<void>;
  /** Extends the leases `token` holds on these deliveries. */
  renew(token: string, ids: readonly string[]): Promise<void>;
  /** Hands back deliveries `token` holds without an attempt on record: due again now. */
  release(token: string, ids: readonly string[]): Promise<void>;
}

export function deliveryLeases(pool: Pool, config: EventsConfig, leaseMs: number): DeliveryLeases {
  const claim = claimStatement({ ...config, leaseMs });
  return {
    async lock(tx) {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK]);
    },

    async claim(tx, token, reclaimLapsed) {
      if (reclaimLapsed) await tx.query(LAPSED);
      const { rows } = await runGeneric<{ id: string; event: Record<string, unknown>; endpoint: Record<string, unknown> }>(tx, claim, [
        token,
      ]);
      return rows.map((row) => ({ id: row.id, event: eventOf(row.event), endpoint: endpointOf(row.endpoint) }));
    },

    async renew(token, ids) {
      await pool.query(
        `UPDATE webhook_deliveries SET lease_expires_at = now() + $3 * interval '1 millisecond'
         WHERE id = ANY ($1::uuid[]) AND lease_token = $2 AND in_flight`,
        [ids, token, leaseMs],
      );
    },

    async release(token, ids) {
      await pool.query(
        `UPDATE webhook_deliveries SET in_flight = false, lease_token = NULL, lease_expires_at = NULL, next_attempt_at = now()
         WHERE id = ANY ($1::uuid[]) AND lease_token = $2 AND in_flight`,
        [ids, token],
      );
    },
  };
}

// Rows read through jsonb carry their timestamps as text.
const eventOf = (json: Record<string, unknown>): EventRow => ({
  ...(json as unknown as EventRow),
  created_at: new Date(json.created_at as string),
});

const endpointOf = (json: Record<string, unknown>): EndpointRow => ({
  ...(json as unknown as EndpointRow),
  previous_secret_expires_at: json.previous_secret_expires_at ? new Date(json.previous_secret_expires_at as string) : null,
});
