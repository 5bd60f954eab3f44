import { randomUUID } from 'node:crypto';
import type { EventsConfig } from '../../../config.ts';
import type { BackgroundTask } from '../../../core/background.ts';
import type { DatabaseListener } from '../../../db/listener.ts';
import { withTransaction, type Pool } from '../../../db/pool.ts';
import type { Logger } from '../../../logging.ts';
import type { ClaimedDelivery, DeliveryAttempts } from './delivery-attempt.ts';
import { DELIVERIES_DUE_CHANNEL, deliveryLeases } from './delivery-leases.ts';
import { recordAttempts, type MadeAttempt } from './delivery-records.ts';

/** Attempts recorded in one transaction at most. */
const MAX_RECORD_BATCH = 256;

/**
 * How long an attempt made waits for the others under way before it is recorded without them: a
 * transaction records (and claims for) a batch, whatever its size, so attempts that end together
 * are recorded together.
 */
const RECORD_LINGER_MS = 5;

/**
 * The deliverer: claims due deliveries (a lease each, across processes), makes their attempts in
 * this process, and records them in batches: one transaction records the attempts that ended while
 * the last was being written, and claims the slots they free. A delivery costs the database a
 * share of that transaction, and no job of the operations engine. The leases of the attempts under way are renewed together every
 * third of the lease; a process that dies stops renewing them, and once they lapse any deliverer
 * makes those deliveries due again: sent once more, with the same webhook-id, never lost. At the
 * stop, attempts under way are cut short and handed back (due again at once), and those already
 * made are recorded.
 */
export function deliverer(deps: {
  pool: Pool;
  config: EventsConfig;
  listener: DatabaseListener;
  leaseMs: number;
  attempts: DeliveryAttempts;
  log: Logger;
}): BackgroundTask {
  const { pool, config, listener, leaseMs, attempts, log } = deps;
  const leases = deliveryLeases(pool, config, leaseMs);
  /** This process's deliverer, in the leases it holds. */
  const token = randomUUID();
  /** The attempts under way or waiting for their record, by delivery: their leases are renewed. */
  const held = new Set<string>();
  const cut = new AbortController();
  let toRecord: MadeAttempt[] = [];
  let recording: Promise<void> | undefined;
  let lingering: NodeJS.Timeout | undefined;
  /** Attempts started and not yet ended. */
  let underWay = 0;
  let renewal: NodeJS.Timeout | undefined;
  let nextReclaimAt = 0;

  let wake: (() => void) | undefined;
  let announced = false;
  listener.subscribe({
    channels: [DELIVERIES_DUE_CHANNEL],
    notified: (_channel, payload) => {
      // Our own record: its transaction claimed what it freed.
      if (payload === token) return;
      announced = true;
      wake?.();
    },
    listening: () => {
      announced = true;
      wake?.();
    },
    lost: () => {},
  });

  function start(delivery: ClaimedDelivery): void {
    held.add(delivery.id);
    // Claimed as the stop began: handed back with the rest.
    if (cut.signal.aborted) return;
    underWay++;
    attempts.make(delivery, cut.signal).then(
      (made) => {
        underWay--;
        // Cut short by the stop: no attempt to speak of; handed back instead.
        if (cut.signal.aborted) return;
        toRecord.push({ deliveryId: delivery.id, endpointId: delivery.endpoint.id, attempt: made });
        recordSoon();
      },
      (error: unknown) => {
        underWay--;
        // The platform failed (not the receiver): the lease lapses and the delivery is sent again.
        held.delete(delivery.id);
        log.error({ err: error, delivery: delivery.id }, 'a webhook attempt failed; it is made again once its lease lapses');
        recordSoon();
      },
    );
    renewal ??= setInterval(() => {
      if (held.size === 0) return;
      leases.renew(token, [...held]).catch((error: unknown) => log.warn({ err: error }, 'renewing webhook delivery leases failed'));
    }, leaseMs / 3).unref();
  }

  /**
   * Records the attempts made once no other is under way, or after RECORD_LINGER_MS; unless a
   * recording is under way (it takes them next).
   */
  function recordSoon(): void {
    if (recording || toRecord.length === 0) return;
    if (underWay > 0 && toRecord.length < MAX_RECORD_BATCH) {
      lingering ??= setTimeout(() => {
        lingering = undefined;
        recordNow();
      }, RECORD_LINGER_MS);
      return;
    }
    recordNow();
  }

  function recordNow(): void {
    clearTimeout(lingering);
    lingering = undefined;
    if (recording) return;
    recording = recordWaiting().finally(() => {
      recording = undefined;
      // Made while the last batch's promise settled.
      if (toRecord.length > 0) recordSoon();
    });
  }

  /** Records the attempts made, a batch at a time, until none waits. */
  async function recordWaiting(): Promise<void> {
    while (toRecord.length > 0) {
      const batch = toRecord.slice(0, MAX_RECORD_BATCH);
      toRecord = toRecord.slice(batch.length);
      let claimed: ClaimedDelivery[] = [];
      try {
        claimed = await withTransaction(pool, async (tx) => {
          await leases.lock(tx);
          await recordAttempts(tx, config, token, batch);
          return cut.signal.aborted ? [] : leases.claim(tx, token, false);
        });
      } catch (error) {
        // Unrecorded, the deliveries' leases lapse and they are attempted again.
        log.error(
          { err: error, deliveries: batch.length },
          'recording webhook attempts failed; they are made again once their leases lapse',
        );
      }
      for (const made of batch) held.delete(made.deliveryId);
      for (const delivery of claimed) start(delivery);
    }
  }

  /** The stop: attempts under way are cut short and handed back; those made are recorded. */
  async function stop(): Promise<void> {
    cut.abort();
    clearInterval(renewal);
    clearTimeout(lingering);
    attempts.close();
    await recording;
    await recordWaiting();
    if (held.size === 0) return;
    const unmade = [...held];
    held.clear();
    await leases
      .release(token, unmade)
      .catch((error: unknown) => log.warn({ err: error }, 'handing back webhook deliveries failed; they are sent once their leases lapse'));
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
    name: 'webhook-deliverer',
    intervalMs: config.dispatchIntervalMs,
    // One long run: a claim whenever deliveries are announced (or at the interval), until the
    // stop. A failed claim ends the run (the attempts under way go on); the runner logs it and
    // starts another after the interval.
    async run(signal) {
      try {
        while (!signal.aborted) {
          // After the recording under way, which holds the claims' lock: a claim begun beside it
          // waited for it anyway, holding a connection of the pool the API's requests use (a
          // quarter to a third of a millisecond a write, at 32 clients with an endpoint).
          while (recording) await recording;
          announced = false;
          // Lapsed leases are looked for at the start and every third of a lease after.
          const reclaimLapsed = Date.now() >= nextReclaimAt;
          const claimed = await withTransaction(pool, async (tx) => {
            await leases.lock(tx);
            return leases.claim(tx, token, reclaimLapsed);
          });
          if (reclaimLapsed) nextReclaimAt = Date.now() + leaseMs / 3;
          for (const delivery of claimed) start(delivery);
          await pause(signal);
        }
      } finally {
        if (signal.aborted) await stop();
      }
    },
  };
}
