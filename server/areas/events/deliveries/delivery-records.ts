import type { EventsConfig } from '../../../config.ts';
import { recordEvents } from '../../../core/events.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { prepared, runGeneric } from '../../../db/statements.ts';
import { toWebhookEndpointOut, type EndpointRow } from '../webhook-endpoints/endpoint-rows.ts';
import { DELIVERIES_DUE_CHANNEL } from './delivery-leases.ts';
import type { DeliveryAttempt } from './delivery-rows.ts';

/** An attempt made, to record on its delivery. */
export interface MadeAttempt {
  deliveryId: string;
  endpointId: string;
  attempt: DeliveryAttempt;
}

/**
 * The attempts' records on their deliveries, with each delivery's next step. Run on its generic
 * plan (`runGeneric`), which reads each delivery by its key whatever the batch's size.
 */
const RECORD = prepared(
  'webhook_deliveries_record',
  `UPDATE webhook_deliveries d SET attempts = d.attempts || jsonb_build_array(u.attempt), attempt_count = d.attempt_count + 1,
     in_flight = false, lease_token = NULL, lease_expires_at = NULL,
     status = CASE WHEN u.succeeded THEN 'succeeded' WHEN u.final OR d.attempt_count >= cardinality($5::bigint[]) THEN 'failed' ELSE 'pending' END,
     next_attempt_at = CASE WHEN u.succeeded OR u.final OR d.attempt_count >= cardinality($5::bigint[]) THEN NULL
                            ELSE now() + ($5::bigint[])[d.attempt_count + 1] * interval '1 millisecond' END,
     finished_at = CASE WHEN u.succeeded OR u.final OR d.attempt_count >= cardinality($5::bigint[]) THEN now() END
   FROM unnest($1::uuid[], $2::jsonb[], $3::boolean[], $4::boolean[]) AS u (id, attempt, succeeded, final)
   WHERE d.id = u.id AND d.status = 'pending' AND d.lease_token = $6
   RETURNING d.id, d.endpoint_id, d.status, (d.attempts -> 0 ->> 'attempted_at')::timestamptz AS first_attempt_at`,
);

/**
 * Records attempts, many at once, in the caller's transaction, and what follows each: success ends its delivery; a
 * failure schedules the next attempt (the retry schedule's next pause) or, when the schedule is
 * spent, ends it failed. Only the deliverer holding a delivery's lease records on it (another took
 * it over once the lease lapsed, and records its own attempt). An endpoint failing since an attempt
 * is marked so; one that failed every attempt since the first of a delivery that failed for good
 * is disabled, and announced (`webhook_endpoint.disabled`) to the organization's other endpoints.
 * The deliverers are told that slots are free and retries may be due (signed with `token`).
 */
export async function recordAttempts(tx: PoolClient, config: EventsConfig, token: string, made: readonly MadeAttempt[]): Promise<void> {
  const { rows: recorded } = await runGeneric<{ id: string; endpoint_id: string; status: string; first_attempt_at: Date }>(tx, RECORD, [
    made.map((one) => one.deliveryId),
    made.map((one) => JSON.stringify(one.attempt)),
    made.map((one) => one.attempt.outcome === 'succeeded'),
    made.map((one) => one.attempt.outcome === 'endpoint_disabled'),
    config.retryScheduleMs,
    token,
  ]);
  const attemptOf = new Map(made.map((one) => [one.deliveryId, one.attempt]));
  // An attempt on a disabled endpoint says nothing of whether the receiver is failing.
  const judged = recorded.filter((row) => attemptOf.get(row.id)!.outcome !== 'endpoint_disabled');
  await markFailing(
    tx,
    judged.map((row) => ({ endpointId: row.endpoint_id, attempt: attemptOf.get(row.id)! })),
  );
  await disableFailing(
    tx,
    judged.filter((row) => row.status === 'failed'),
  );
  await tx.query(`SELECT pg_notify($1, $2)`, [DELIVERIES_DUE_CHANNEL, token]);
}

/**
 * Endpoints' `failing_since` set or cleared, each only where it changes. On its generic plan
 * (`runGeneric`), with the endpoints found by key (`= ANY`): joined to the list alone, that plan
 * read every endpoint of the platform.
 */
const MARK_FAILING = prepared(
  'webhook_endpoints_mark_failing',
  `UPDATE webhook_endpoints w SET failing_since = CASE WHEN u.cleared THEN u.since ELSE coalesce(w.failing_since, u.since) END
   FROM unnest($1::uuid[], $2::boolean[], $3::timestamptz[]) AS u (id, cleared, since)
   WHERE w.id = ANY ($1::uuid[]) AND w.id = u.id
     AND w.failing_since IS DISTINCT FROM (CASE WHEN u.cleared THEN u.since ELSE coalesce(w.failing_since, u.since) END)`,
);

/**
 * Each endpoint's `failing_since` after these attempts, taken in the order they were made: a
 * success clears it, and a failure sets it unless it is set already.
 */
async function markFailing(tx: PoolClient, attempts: Array<{ endpointId: string; attempt: DeliveryAttempt }>): Promise<void> {
  const byEndpoint = new Map<string, { cleared: boolean; since: string | null }>();
  for (const { endpointId, attempt } of [...attempts].sort((a, b) => a.attempt.attempted_at.localeCompare(b.attempt.attempted_at))) {
    const state = byEndpoint.get(endpointId) ?? { cleared: false, since: null };
    if (attempt.outcome === 'succeeded') byEndpoint.set(endpointId, { cleared: true, since: null });
    else byEndpoint.set(endpointId, { cleared: state.cleared, since: state.since ?? attempt.attempted_at });
  }
  if (byEndpoint.size === 0) return;
  const ids = [...byEndpoint.keys()];
  await runGeneric(tx, MARK_FAILING, [ids, ids.map((id) => byEndpoint.get(id)!.cleared), ids.map((id) => byEndpoint.get(id)!.since)]);
}

/** Disables the endpoints that have failed since the first attempt of a delivery that failed for good. */
async function disableFailing(tx: PoolClient, failed: Array<{ endpoint_id: string; first_attempt_at: Date }>): Promise<void> {
  if (failed.length === 0) return;
  // The latest first attempt of each endpoint's failed deliveries: failing since it or earlier is enough.
  const latestFirst = new Map<string, Date>();
  for (const row of failed) {
    const known = latestFirst.get(row.endpoint_id);
    if (!known || row.first_attempt_at > known) latestFirst.set(row.endpoint_id, row.first_attempt_at);
  }
  const { rows: disabled } = await tx.query<EndpointRow>(
    `UPDATE webhook_endpoints w SET enabled = false, disabled_reason = 'failing', updated_at = now()
     FROM unnest($1::uuid[], $2::timestamptz[]) AS u (id, first_attempt_at)
     WHERE w.id = u.id AND w.enabled AND w.failing_since IS NOT NULL AND w.failing_since <= u.first_attempt_at RETURNING w.*`,
    [[...latestFirst.keys()], [...latestFirst.values()]],
  );
  await recordEvents(
    tx,
    disabled.map((endpoint) => ({
      orgId: endpoint.org_id,
      type: 'webhook_endpoint.disabled' as const,
      resourceId: endpoint.id,
      data: { webhook_endpoint: toWebhookEndpointOut(endpoint) },
    })),
  );
}
