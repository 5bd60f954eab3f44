import type { PoolClient, Queryable } from '../../../db/pool.ts';
import type { FieldError } from '../../../core/errors.ts';
import { vmActionNotAllowed, vmNotFound, vmStateConflict } from './vm-errors.ts';
import { inFlightVmChange } from './vm-queue.ts';
import { ACCEPTED_STATES, allowedActions, changeInFlight, listWords, policyReason, type StateChange, type VmAction } from './vm-policy.ts';
import { findLiveVm, type VmRow } from './vm-rows.ts';

// The checks every change of an instance makes, in the order the contract gives: policy first
// (allowed_actions), then the request's own rules, then the instance's state.

/** Rule 4: an action outside allowed_actions is refused. */
export function assertAllowed(vm: VmRow, action: VmAction): void {
  const allowed = allowedActions(vm);
  if (!allowed.includes(action)) throw vmActionNotAllowed(vm, action, policyReason(vm), allowed);
}

/** One change at a time, and the states the action accepts. */
export async function assertStateAccepts(db: Queryable, vm: VmRow, change: StateChange): Promise<void> {
  const accepted: readonly string[] = ACCEPTED_STATES[change];
  // Waiting for a delete would not help: say which states the action needs instead.
  if (vm.state !== 'deleting' && changeInFlight(vm)) {
    const operation = await inFlightVmChange(db, vm.org_id, vm.id);
    // A power change in flight shows in desired_state; the other changes have a state of their own.
    const settled = vm.state === 'running' || vm.state === 'stopped' || vm.state === 'rescue';
    const where = settled ? `${vm.state} (going to ${vm.desired_state})` : vm.state;
    throw vmStateConflict(
      `Instance ${vm.id} (${vm.name}) is ${where}; wait for ${operation ? `operation ${operation.id}` : 'its operation'} to finish, then retry.`,
    );
  }
  if (!accepted.includes(vm.state))
    throw vmStateConflict(`Instance ${vm.id} (${vm.name}) is ${vm.state}; ${change} needs state ${listWords(accepted)}.`);
}

/** The live instance, locked for the change; 404 when the organization has none of that id. */
export async function lockLive(tx: PoolClient, orgId: string, vmId: string): Promise<VmRow> {
  const vm = await findLiveVm(tx, orgId, vmId, true);
  if (!vm) throw vmNotFound(vmId);
  return vm;
}

/** The image's minimums against a size: the errors, one per field below its minimum. */
export function imageShortfalls(
  image: { min_disk_gb: number; min_ram_mb: number },
  size: { disk_gb: number; memory_mb: number },
): FieldError[] {
  const errors: FieldError[] = [];
  if (size.disk_gb < image.min_disk_gb)
    errors.push({ pointer: '/disk_gb', detail: `must be at least ${image.min_disk_gb} (the image's min_disk_gb)` });
  if (size.memory_mb < image.min_ram_mb)
    errors.push({ pointer: '/memory_mb', detail: `must be at least ${image.min_ram_mb} (the image's min_ram_mb)` });
  return errors;
}

/** What an image needs, in words: `at least 20 GB of disk and 1024 MB of memory`. */
export function imageNeeds(image: { min_disk_gb: number; min_ram_mb: number }, errors: FieldError[]): string {
  const parts = errors.map((error) =>
    error.pointer === '/disk_gb' ? `${image.min_disk_gb} GB of disk` : `${image.min_ram_mb} MB of memory`,
  );
  return `at least ${parts.join(' and ')}`;
}
