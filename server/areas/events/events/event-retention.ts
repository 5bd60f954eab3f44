import type { BackgroundTask } from '../../../core/background.ts';
import type { Clock } from '../../../core/clock.ts';
import type { Pool } from '../../../db/pool.ts';
import { purgeEventsBefore } from './event-rows.ts';

/** Events deleted per statement: a long backlog goes in short transactions. */
const PURGE_BATCH = 5_000;

/** Deletes events (and their deliveries) older than the operator's retention, hourly. */
export function eventRetention({ pool, clock, retentionDays }: { pool: Pool; clock: Clock; retentionDays: number }): BackgroundTask {
  return {
    name: 'event-retention',
    intervalMs: 3_600_000,
    async run(signal) {
      const before = new Date(clock.now().getTime() - retentionDays * 86_400_000);
      while (!signal.aborted && (await purgeEventsBefore(pool, before, PURGE_BATCH)) === PURGE_BATCH);
    },
  };
}
