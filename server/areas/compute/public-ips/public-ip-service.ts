import { randomUUID } from 'node:crypto';
import type { PoolClient } from '../../../db/pool.ts';
import type { OperationRow, OperationType } from '../../../engine/operation-record.ts';
import { invalidReference } from '../../../core/errors.ts';
import type { BudgetGuard } from '../../area.ts';
import type { Catalogue } from '../catalogue/catalogue.ts';
import { publicIpNotFound, publicIpRegionMismatch, publicIpStateConflict } from './public-ip-errors.ts';
import { vmStateConflict } from '../vms/vm-errors.ts';
import { findPublicIp, updatePublicIp, type PublicIpRow } from './public-ip-rows.ts';
import { queue } from '../vms/vm-queue.ts';
import { assertAllowed } from '../vms/vm-rules.ts';
import { findLiveVm } from '../vms/vm-rows.ts';

export interface PublicIpChange {
  publicIp: PublicIpRow;
  operation: OperationRow;
  before: PublicIpRow | null;
}

/**
 * Public IPs: the state machine of the contract. Each change is one operation, and only one runs
 * at a time:
 *
 *   (none) → pending → allocated            allocatePublicIp
 *   allocated → associating → associated    associatePublicIp
 *   associated → disassociating → allocated disassociatePublicIp
 *   allocated | associated | error → releasing → gone   releasePublicIp
 *
 * A failed operation leaves `error` (only release is accepted from there).
 */
export function createPublicIpService({
  catalogue,
  budget,
  maxAttempts,
}: {
  catalogue: Catalogue;
  budget: BudgetGuard;
  maxAttempts: number;
}) {
  const apply = async (
    tx: PoolClient,
    before: PublicIpRow,
    type: OperationType,
    changes: Parameters<typeof updatePublicIp>[2],
    payload: Record<string, unknown> = {},
  ): Promise<PublicIpChange> => {
    const publicIp = await updatePublicIp(tx, before.id, changes);
    const operation = await queue(tx, maxAttempts, before.org_id, type, { type: 'public_ip', id: before.id }, payload);
    return { publicIp, operation, before };
  };

  const lock = async (tx: PoolClient, orgId: string, publicIpId: string): Promise<PublicIpRow> => {
    const publicIp = await findPublicIp(tx, orgId, publicIpId, true);
    if (!publicIp) throw publicIpNotFound(publicIpId);
    return publicIp;
  };

  return {
    find: findPublicIp,

    async allocate(tx: PoolClient, orgId: string, regionId: string): Promise<PublicIpChange> {
      if (!catalogue.region(regionId))
        throw invalidReference([{ pointer: '/region', detail: `no region ${regionId}; list the regions with listRegions` }]);
      await budget.assertCanCreateBillable(tx, orgId);
      const { rows } = await tx.query<PublicIpRow>(
        `INSERT INTO public_ips (id, org_id, region_id, state) VALUES ($1, $2, $3, 'pending') RETURNING *`,
        [randomUUID(), orgId, regionId],
      );
      const publicIp = rows[0]!;
      const operation = await queue(tx, maxAttempts, orgId, 'ip.allocate', { type: 'public_ip', id: publicIp.id });
      return { publicIp, operation, before: null };
    },

    /** Refusals in the contract's order. */
    async associate(tx: PoolClient, orgId: string, publicIpId: string, vmId: string): Promise<PublicIpChange> {
      const publicIp = await lock(tx, orgId, publicIpId);
      if (publicIp.state !== 'allocated') {
        const advice =
          publicIp.state === 'associated'
            ? ' Disassociate it first.'
            : publicIp.state === 'error'
              ? ' Release it.'
              : ' Wait for its operation to finish.';
        throw publicIpStateConflict(
          `Public IP ${publicIp.id} is ${publicIp.state}; only an allocated public IP can be associated.${advice}`,
        );
      }
      const vm = await findLiveVm(tx, orgId, vmId, true);
      if (!vm) throw invalidReference([{ pointer: '/vm_id', detail: `no instance ${vmId} in this organization` }]);
      if (vm.region_id !== publicIp.region_id) throw publicIpRegionMismatch(publicIp, vm);
      assertAllowed(vm, 'public_ip');
      if (vm.state === 'deleting' || vm.state === 'error')
        throw vmStateConflict(`Instance ${vm.id} is ${vm.state}; a public IP cannot be associated with it.`);
      const { rows: held } = await tx.query<{ id: string }>('SELECT id FROM public_ips WHERE vm_id = $1 AND released_at IS NULL', [vm.id]);
      if (held[0]) throw publicIpStateConflict(`Instance ${vm.id} already has public IP ${held[0].id}; an instance holds at most one.`);
      return apply(tx, publicIp, 'ip.associate', { state: 'associating', vm_id: vm.id });
    },

    async disassociate(tx: PoolClient, orgId: string, publicIpId: string): Promise<PublicIpChange> {
      const publicIp = await lock(tx, orgId, publicIpId);
      if (publicIp.state !== 'associated')
        throw publicIpStateConflict(`Public IP ${publicIp.id} is ${publicIp.state}; only an associated public IP can be disassociated.`);
      return apply(tx, publicIp, 'ip.disassociate', { state: 'disassociating' });
    },

    async release(tx: PoolClient, orgId: string, publicIpId: string): Promise<PublicIpChange> {
      const publicIp = await lock(tx, orgId, publicIpId);
      if (!['allocated', 'associated', 'error'].includes(publicIp.state)) {
        throw publicIpStateConflict(`Public IP ${publicIp.id} is ${publicIp.state}; wait for its operation to finish, then release it.`);
      }
      return apply(tx, publicIp, 'ip.release', { state: 'releasing' }, { previous_state: publicIp.state });
    },
  };
}

export type PublicIpService = ReturnType<typeof createPublicIpService>;
