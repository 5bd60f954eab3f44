import { stringify } from 'lossless-json';
import type { EventsConfig } from '../../../config.ts';
import { iso } from '../../../core/clock.ts';
import { DomainError } from '../../../core/errors.ts';
import { recordEvents } from '../../../core/events.ts';
import { batchedLookup } from '../../../db/batched-lookup.ts';
import type { Pool, PoolClient } from '../../../db/pool.ts';
import type { SecretBox } from '../../../drivers/embedded/secret-box.ts';
import type { Executor } from '../../../engine/executor.ts';
import type { OperationRow } from '../../../engine/operation-record.ts';
import { toEventOut, type EventRow } from '../events/event-rows.ts';
import { signatureHeader } from '../webhook-endpoints/endpoint-secrets.ts';
import { toWebhookEndpointOut, type EndpointRow } from '../webhook-endpoints/endpoint-rows.ts';
import { allowedAddresses, checkUrlForm, type HostResolver } from '../webhook-endpoints/url-safety.ts';
import { DELIVERIES_DUE_CHANNEL } from './delivery-dispatcher.ts';
import { postSigned } from './delivery-http.ts';
import type { DeliveryAttempt } from './delivery-rows.ts';

/** How a `webhook.deliver` job's attempt went. */
type AttemptOutcome =
  /** The delivery is no longer waiting for this attempt (its endpoint was deleted, or it finished). */
  { kind: 'gone' } | { kind: 'attempted'; attempt: DeliveryAttempt; endpointId: string };

interface DueDelivery {
  delivery_id: string;
  status: string;
  event: EventRow;
  endpoint: EndpointRow;
}

/**
 * The `webhook.deliver` job: one attempt of one delivery, run by the operations engine (claimed
 * with a lease, across processes; a process that dies mid-attempt leaves it to another once the
 * lease lapses, which sends it again with the same `webhook-id`). `perform` makes the attempt and
 * never fails for what the receiver does: its answer, silence or refusal is the attempt's record,
 * written with the delivery's next step in the engine's transaction (`succeeded`).
 */
export function deliveryExecutor(deps: {
  pool: Pool;
  config: EventsConfig;
  secrets: SecretBox;
  resolveHost: HostResolver;
}): Executor<AttemptOutcome> {
  const { pool, config, secrets, resolveHost } = deps;

  /** The deliveries of the attempts one claim starts together, read in one query. */
  const dueDeliveries = batchedLookup(async (deliveryIds: string[]) => {
    const { rows } = await pool.query<DueDelivery>(
      `SELECT d.id AS delivery_id, d.status, to_jsonb(e) AS event, to_jsonb(w) AS endpoint
       FROM webhook_deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id
       WHERE d.id = ANY($1::uuid[])`,
      [deliveryIds],
    );
    return new Map(rows.map((row) => [row.delivery_id, row]));
  });

  async function load(deliveryId: string): Promise<DueDelivery | undefined> {
    const row = await dueDeliveries(deliveryId);
    if (!row) return undefined;
    // Read through jsonb: the timestamps come back as text.
    const endpoint = row.endpoint as unknown as Record<string, unknown>;
    const event = row.event as unknown as Record<string, unknown>;
    return {
      ...row,
      event: { ...(event as unknown as EventRow), created_at: new Date(event.created_at as string) },
      endpoint: {
        ...(endpoint as unknown as EndpointRow),
        previous_secret_expires_at: endpoint.previous_secret_expires_at ? new Date(endpoint.previous_secret_expires_at as string) : null,
      },
    };
  }

  /** The secrets that sign now: the current one, and the previous one until it expires. */
  function signingSecrets(endpoint: EndpointRow, now: Date): string[] {
    const previous =
      endpoint.previous_secret_sealed && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now
        ? [secrets.open(endpoint.previous_secret_sealed)]
        : [];
    return [secrets.open(endpoint.secret_sealed), ...previous];
  }

  async function attempt(due: DueDelivery, signal: AbortSignal): Promise<DeliveryAttempt> {
    const attemptedAt = new Date();
    const at = iso(attemptedAt);
    if (!due.endpoint.enabled) return { attempted_at: at, status_code: null, latency_ms: 0, outcome: 'endpoint_disabled' };
    let url: URL;
    let addresses: string[];
    try {
      // Checked again at every attempt: the name may resolve elsewhere than when it was created.
      url = checkUrlForm(due.endpoint.url, config.allowInsecureUrls);
      addresses = await allowedAddresses(url, resolveHost, config.allowInsecureUrls);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return { attempted_at: at, status_code: null, latency_ms: 0, outcome: 'address_not_allowed' };
    }
    const body = stringify(toEventOut(due.event))!;
    const result = await postSigned({
      url,
      addresses,
      body,
      timeoutMs: config.timeoutMs,
      signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'CloudPlatform-Webhooks/1.0',
        'webhook-id': due.event.id,
        'webhook-timestamp': String(Math.floor(attemptedAt.getTime() / 1000)),
        'webhook-signature': signatureHeader(signingSecrets(due.endpoint, attemptedAt), due.event.id, attemptedAt, body),
      },
    });
    return { attempted_at: at, ...result };
  }

  return {
    async perform(job: OperationRow, context) {
      const due = await load(job.resource_id);
      if (!due || due.status !== 'pending') return { kind: 'gone' };
      return { kind: 'attempted', attempt: await attempt(due, context.signal), endpointId: due.endpoint.id };
    },

    async succeeded(tx, job, outcome) {
      // The job leaves no row behind: the delivery's attempts are its record, and an
      // organization's operations stay its own. Sent with the attempt's record, one round trip.
      const removed = tx.query('DELETE FROM operations WHERE id = $1', [job.id]);
      removed.catch(() => {});
      if (outcome.kind !== 'gone') await recordAttempt(tx, job.resource_id, outcome.endpointId, outcome.attempt);
      await removed;
    },

    async failed(tx, job) {
      // The engine gave up on the job itself (the platform failed, not the receiver): the delivery
      // waits for its next turn, as after a failed attempt, rather than being lost.
      await tx.query('DELETE FROM operations WHERE id = $1', [job.id]);
      await tx.query(
        `UPDATE webhook_deliveries SET in_flight = false,
           next_attempt_at = now() + ($2::bigint[])[least(attempt_count + 1, cardinality($2::bigint[]))] * interval '1 millisecond'
         WHERE id = $1 AND status = 'pending'`,
        [job.resource_id, config.retryScheduleMs],
      );
    },

    async cancelled() {
      // Jobs are never cancelled (cancelOperation leaves them out).
    },
  };

  /**
   * The attempt, and what follows it: success ends the delivery; a failure schedules the next
   * attempt (the retry schedule's next pause) or, when the schedule is spent, ends it failed. An
   * endpoint that failed every attempt since this delivery's first, through its whole schedule,
   * is disabled, and announced (`webhook_endpoint.disabled`) to the organization's other endpoints.
   */
  async function recordAttempt(tx: PoolClient, deliveryId: string, endpointId: string, attempt: DeliveryAttempt): Promise<void> {
    const succeeded = attempt.outcome === 'succeeded';
    const final = attempt.outcome === 'endpoint_disabled';
    const recorded = tx.query<{ status: string; first_attempt_at: Date }>(
      `UPDATE webhook_deliveries SET attempts = attempts || $2::jsonb, attempt_count = attempt_count + 1, in_flight = false,
         status = CASE WHEN $3 THEN 'succeeded' WHEN $4 OR attempt_count >= cardinality($5::bigint[]) THEN 'failed' ELSE 'pending' END,
         next_attempt_at = CASE WHEN $3 OR $4 OR attempt_count >= cardinality($5::bigint[]) THEN NULL
                                ELSE now() + ($5::bigint[])[attempt_count + 1] * interval '1 millisecond' END,
         finished_at = CASE WHEN $3 OR $4 OR attempt_count >= cardinality($5::bigint[]) THEN now() END
       WHERE id = $1 AND status = 'pending'
       RETURNING status, (attempts -> 0 ->> 'attempted_at')::timestamptz AS first_attempt_at`,
      [deliveryId, JSON.stringify([attempt]), succeeded, final, config.retryScheduleMs],
    );
    // A slot of the endpoint is free again (and a retry may be due): the dispatchers look. Sent
    // with the record, and answered after it.
    const announced = tx.query(`SELECT pg_notify($1, '')`, [DELIVERIES_DUE_CHANNEL]);
    announced.catch(() => {});
    const { rows } = await recorded;
    await announced;
    const delivery = rows[0];
    if (!delivery || final) return;
    if (succeeded) {
      await tx.query('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [endpointId]);
      return;
    }
    await tx.query('UPDATE webhook_endpoints SET failing_since = $2 WHERE id = $1 AND failing_since IS NULL', [
      endpointId,
      attempt.attempted_at,
    ]);
    if (delivery.status !== 'failed') return;
    const { rows: disabled } = await tx.query<EndpointRow>(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing', updated_at = now()
       WHERE id = $1 AND enabled AND failing_since IS NOT NULL AND failing_since <= $2 RETURNING *`,
      [endpointId, delivery.first_attempt_at],
    );
    const endpoint = disabled[0];
    if (endpoint) {
      await recordEvents(tx, [
        {
          orgId: endpoint.org_id,
          type: 'webhook_endpoint.disabled',
          resourceId: endpoint.id,
          data: { webhook_endpoint: toWebhookEndpointOut(endpoint) },
        },
      ]);
    }
  }
}
