import type { Queryable } from '../db/pool.ts';

/**
 * Another process's pass started this share of an interval ago or later: this one's is skipped.
 * Below 1, so that a timer that fires a little early does not skip the pass of the process that
 * ran the last one.
 */
const SAME_INTERVAL = 0.9;

/** Claims a shared task's pass for this interval: true when no process started one during it. */
export type PassClaim = (task: string, intervalMs: number) => Promise<boolean>;

/**
 * The claim of shared background passes (`BackgroundTask.shared`), recorded in
 * `background_passes` by the database's clock, so that the processes' clocks need not agree. A
 * process that dies during its pass holds nothing: the next interval's pass is claimed as usual.
 */
export function claimPassesIn(db: Queryable): PassClaim {
  return async (task, intervalMs) => {
    const { rowCount } = await db.query(
      `INSERT INTO background_passes AS pass (task, started_at) VALUES ($1, now())
       ON CONFLICT (task) DO UPDATE SET started_at = now()
         WHERE pass.started_at <= now() - make_interval(secs => $2::double precision / 1000)`,
      [task, intervalMs * SAME_INTERVAL],
    );
    return rowCount === 1;
  };
}
