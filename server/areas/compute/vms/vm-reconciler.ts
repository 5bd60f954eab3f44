import type { Pool } from '../../../db/pool.ts';
import type { HypervisorDriver } from '../../../drivers/hypervisor.ts';
import { recordObservations, settleUnrequestedStops } from './vm-rows.ts';

/** Servers described per driver call. */
const BATCH = 200;

/**
 * The reconciler: asks the hypervisor what it sees for every live instance and records it in the
 * observed_* fields, which come from nowhere else. An instance the hypervisor does not know (not
 * created yet, or its creation failed) keeps what was last observed, null if nothing was. Safe
 * to run in several processes at once: a report only replaces an older one. An instance whose
 * guest stopped by itself is recorded as stopped (settleUnrequestedStops).
 */
export function createReconciler(pool: Pool, hypervisor: HypervisorDriver) {
  return {
    async reconcile(signal?: AbortSignal): Promise<number> {
      let observed = 0;
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        const { rows } = await pool.query<{ id: string }>(
          `SELECT id FROM vms WHERE deleted_at IS NULL AND state <> 'creating' AND id > $1 ORDER BY id LIMIT $2`,
          [after, BATCH],
        );
        if (rows.length === 0 || signal?.aborted) return observed;
        // One statement per batch: the reconciler runs every few seconds over every instance.
        const reports = await hypervisor.describeServers(rows.map((row) => row.id));
        await recordObservations(pool, reports);
        await settleUnrequestedStops(pool, reports);
        observed += reports.length;
        after = rows[rows.length - 1]!.id;
      }
    },
  };
}
