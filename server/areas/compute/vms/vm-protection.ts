import { recordAudit } from '../../../core/audit.ts';
import type { Actor } from '../../../core/principal.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { vmNotFound, vmStateConflict } from './vm-errors.ts';
import type { VmOut } from './vm-policy.ts';
import { findLiveVm, toVmOut, updateVm } from './vm-rows.ts';

/**
 * The operator's protection switch (`npm run admin -- set-protection`): it works where a
 * customer may not switch protection (an instance in a single-copy region, whose allowed_actions
 * then shrink to start and console), and leaves an audit event with the operator as actor.
 * Throws 404 not_found for an instance that does not exist (or was deleted), and 409
 * vm_state_conflict for one being deleted.
 */
export async function setProtectionByOperator(
  tx: PoolClient,
  input: { orgId: string; vmId: string; protected: boolean; actor: Actor },
): Promise<VmOut> {
  const vm = await findLiveVm(tx, input.orgId, input.vmId, true);
  if (!vm) throw vmNotFound(input.vmId);
  if (vm.state === 'deleting')
    throw vmStateConflict(`Instance ${vm.id} (${vm.name}) is deleting; its protection can no longer be changed.`);
  const updated =
    vm.protected === input.protected
      ? vm
      : await updateVm(tx, vm.id, { protected: input.protected, protected_by: input.protected ? 'operator' : null });
  const after = toVmOut(updated);
  await recordAudit(tx, {
    orgId: input.orgId,
    action: 'vm.set_protection',
    resourceType: 'vm',
    resourceId: vm.id,
    before: toVmOut(vm),
    after,
    actor: input.actor,
    result: 'succeeded',
  });
  return after;
}
