import type { EventsConfig } from '../../../config.ts';
import type { BackgroundTask } from '../../../core/background.ts';
import type { DatabaseListener } from '../../../db/listener.ts';
import { withTransaction, type Pool } from '../../../db/pool.ts';
import { enqueueOperation } from '../../../engine/operation-record.ts';

/** Announced when a delivery is due (the fan-out trigger, a resend, a ping) or an attempt ends. */
export const DELIVERIES_DUE_CHANNEL = 'webhook_deliveries_due';

/** Advisory lock of a dispatch pass: one process at a time hands out the endpoints' slots. */
const DISPATCH_LOCK = 7_361_204_131;

/**
 * The dispatcher: queues the attempts of due deliveries on the operations engine, as
 * `webhook.deliver` jobs, within two limits that keep a slow or hostile receiver from costing
 * anyone else: at most `endpointConcurrency` attempts under way per endpoint, and at most
 * `maxInFlight` in all (the engine's other slots stay the operations'). The oldest due come
 * first, a few per endpoint, so that an endpoint with a long backlog never holds back another.
 * A delivery is marked in flight and its job queued in one transaction: it is queued once,
 * and never lost.
 */
export function deliveryDispatcher(deps: {
  pool: Pool;
  config: EventsConfig;
  listener: DatabaseListener;
  maxAttempts: number;
}): BackgroundTask {
  const { pool, config, listener, maxAttempts } = deps;
  let wake: (() => void) | undefined;
  let announced = false;
  listener.subscribe({
    channels: [DELIVERIES_DUE_CHANNEL],
    notified: () => {
      announced = true;
      wake?.();
    },
    listening: () => {
      announced = true;
      wake?.();
    },
    lost: () => {},
  });

  /** Queues the attempts due now; how many. */
  async function dispatch(): Promise<number> {
    return withTransaction(pool, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [DISPATCH_LOCK]);
      const { rows } = await tx.query<{ id: string; org_id: string }>(
        `WITH busy AS (SELECT count(*)::int AS n FROM webhook_deliveries WHERE in_flight)
         SELECT due.id, due.org_id FROM webhook_endpoints w
         CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM webhook_deliveries f WHERE f.endpoint_id = w.id AND f.in_flight) slots
         CROSS JOIN LATERAL (
           SELECT d.id, d.org_id, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.endpoint_id = w.id AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at LIMIT greatest(0, $1 - slots.n)) due
         ORDER BY due.next_attempt_at
         LIMIT greatest(0, $2 - (SELECT n FROM busy))`,
        [config.endpointConcurrency, config.maxInFlight],
      );
      if (rows.length === 0) return 0;
      // Sent together, one round trip: the connection pipelines them, in this order.
      await Promise.all([
        tx.query('UPDATE webhook_deliveries SET next_attempt_at = NULL, in_flight = true WHERE id = ANY ($1::uuid[])', [
          rows.map((row) => row.id),
        ]),
        ...rows.map((row) =>
          enqueueOperation(tx, {
            orgId: row.org_id,
            type: 'webhook.deliver',
            resourceType: 'webhook_delivery',
            resourceId: row.id,
            maxAttempts,
          }),
        ),
      ]);
      return rows.length;
    });
  }

  /** Until an announcement, the interval, or the stop. */
  function pause(signal: AbortSignal): Promise<void> {
    if (announced || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, config.dispatchIntervalMs);
      signal.addEventListener('abort', done, { once: true });
      wake = done;
    });
  }

  return {
    name: 'webhook-dispatcher',
    intervalMs: config.dispatchIntervalMs,
    // One long run: a pass whenever deliveries are announced (or at the interval), until the stop.
    // A failed pass ends the run; the runner logs it and starts another after the interval.
    async run(signal) {
      while (!signal.aborted) {
        announced = false;
        await dispatch();
        await pause(signal);
      }
    },
  };
}
