import type { Queryable } from '../../../db/pool.ts';
import { enqueueOperation, type OperationRow, type OperationType } from '../../../engine/operation-record.ts';

/** The operation types that change an instance's state (one at a time). */
export const STATE_CHANGING_TYPES: readonly OperationType[] = [
  'vm.create',
  'vm.start',
  'vm.stop',
  'vm.reboot',
  'vm.resize',
  'vm.rebuild',
  'vm.rescue',
  'vm.unrescue',
  'vm.delete',
];

/** Queues an operation on an instance or a public IP, in the transaction of the change. */
export function queue(
  db: Queryable,
  maxAttempts: number,
  orgId: string,
  type: OperationType,
  resource: { type: 'vm' | 'public_ip'; id: string },
  payload: Record<string, unknown> = {},
): Promise<OperationRow> {
  return enqueueOperation(db, { orgId, type, resourceType: resource.type, resourceId: resource.id, payload, maxAttempts });
}

/** The instance's state-changing operation still in flight, if any (for "wait for operation X"). */
export async function inFlightVmChange(db: Queryable, orgId: string, vmId: string): Promise<OperationRow | undefined> {
  const { rows } = await db.query<OperationRow>(
    `SELECT * FROM operations WHERE org_id = $1 AND resource_type = 'vm' AND resource_id = $2 AND finished_at IS NULL AND type = ANY($3::text[])
     ORDER BY created_at DESC LIMIT 1`,
    [orgId, vmId, STATE_CHANGING_TYPES],
  );
  return rows[0];
}
