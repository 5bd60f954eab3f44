import { randomUUID } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import { invalidReference, type FieldError } from '../../../core/errors.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { prepared, runPrepared } from '../../../db/statements.ts';
import type { InstalledSshKey } from '../../../drivers/hypervisor.ts';
import { recordFinishedOperation, type OperationRow, type OperationType } from '../../../engine/operation-record.ts';
import type { BudgetGuard } from '../../area.ts';
import type { Catalogue } from '../catalogue/catalogue.ts';
import { checkFirewallRules } from './firewall.ts';
import {
  diskShrinkNotAllowed,
  imageRequirementsNotMet,
  userDataUnsupported,
  vmNameTaken,
  vmProtected,
  vmStateConflict,
  workloadNotAllowed,
} from './vm-errors.ts';
import type { StateChange, VmAction } from './vm-policy.ts';
import { queue } from './vm-queue.ts';
import { updateVm, VM_COLUMNS, type VmRow } from './vm-rows.ts';
import { assertAllowed, assertStateAccepts, imageNeeds, imageShortfalls, lockLive } from './vm-rules.ts';

// The rules of instances: creation and every action, each a short function that checks in the
// order the contract gives (policy first, then the request's own rules, then the instance's
// state; vm-rules.ts) and queues its operation in the caller's transaction.

// The name's check is the INSERT itself: a live instance of that name makes it insert nothing.
const INSERT_VM = prepared(
  'vm_insert',
  `INSERT INTO vms (id, org_id, name, region_id, disk_redundancy, storage_pool_id, network_profile_id, image_id, image_name,
     vcpus, memory_mb, disk_gb, state, desired_state, ssh_keys, labels)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'creating', 'running', $13, $14)
   ON CONFLICT (org_id, region_id, name) WHERE deleted_at IS NULL DO NOTHING
   RETURNING ${VM_COLUMNS}`,
);

type VmCreateRequest = components['schemas']['VmCreateRequest'];
type VmResizeRequest = components['schemas']['VmResizeRequest'];
type FirewallRule = components['schemas']['FirewallRule'];

export interface VmServiceDependencies {
  catalogue: Catalogue;
  budget: BudgetGuard;
  /** max_attempts of new operations. */
  maxAttempts: number;
}

/** An accepted change: the instance as it is now and the operation carrying the change out. */
export interface VmChange {
  vm: VmRow;
  operation: OperationRow;
  /** The instance before the change, for the audit event. */
  before: VmRow;
}

/** Changes the instance and queues the operation that carries the change out. */
async function apply(
  deps: VmServiceDependencies,
  tx: PoolClient,
  before: VmRow,
  type: OperationType,
  changes: Parameters<typeof updateVm>[2],
  payload: Record<string, unknown> = {},
): Promise<VmChange> {
  // Neither statement needs the other's answer: sent together, one round trip.
  const [vm, operation] = await Promise.all([
    Object.keys(changes).length > 0 ? updateVm(tx, before.id, changes) : before,
    queue(tx, deps.maxAttempts, before.org_id, type, { type: 'vm', id: before.id }, payload),
  ]);
  return { vm, operation, before };
}

/** An action that takes no input: policy, then state, then the change and its operation. */
async function plainAction(
  deps: VmServiceDependencies,
  tx: PoolClient,
  target: { orgId: string; vmId: string },
  action: VmAction & StateChange,
  type: OperationType,
  changes: Parameters<typeof updateVm>[2],
): Promise<VmChange> {
  const vm = await lockLive(tx, target.orgId, target.vmId);
  assertAllowed(vm, action);
  await assertStateAccepts(tx, vm, action);
  return apply(deps, tx, vm, type, changes);
}

/** The region, image, pool, profile and SSH keys a creation names, each checked; 422 listing every unknown one. */
async function referencesOf(deps: VmServiceDependencies, tx: PoolClient, orgId: string, request: VmCreateRequest) {
  const references: FieldError[] = [];
  const region = deps.catalogue.region(request.region);
  const image = region ? deps.catalogue.image(region.id, request.image) : undefined;
  if (!region) {
    references.push({ pointer: '/region', detail: `no region ${request.region}; see listRegions` });
  } else {
    if (!image)
      references.push({
        pointer: '/image',
        detail: `no image ${request.image} in region ${region.id}; see listImages?region=${region.id}`,
      });
    if (!region.storage_pools.some((pool) => pool.id === request.storage_pool))
      references.push({ pointer: '/storage_pool', detail: `no storage pool ${request.storage_pool} in region ${region.id}` });
    if (!region.network_profiles.some((entry) => entry.id === request.network_profile))
      references.push({ pointer: '/network_profile', detail: `no network profile ${request.network_profile} in region ${region.id}` });
  }
  const keyNames = request.ssh_keys ?? [];
  // Most creations name no key: no query for none.
  const keys =
    keyNames.length === 0
      ? []
      : (
          await tx.query<InstalledSshKey>(
            'SELECT name, public_key AS "publicKey" FROM ssh_keys WHERE org_id = $1 AND name = ANY($2::text[])',
            [orgId, keyNames],
          )
        ).rows;
  const installed = keyNames.map((name) => keys.find((key) => key.name === name));
  installed.forEach((key, index) => {
    if (!key) references.push({ pointer: `/ssh_keys/${index}`, detail: `no SSH key named ${keyNames[index]} in this organization` });
  });
  if (references.length > 0) throw invalidReference(references);
  return { region: region!, image: image!, sshKeys: installed as InstalledSshKey[] };
}

export async function createVm(deps: VmServiceDependencies, tx: PoolClient, orgId: string, request: VmCreateRequest): Promise<VmChange> {
  if (request.user_data !== undefined && request.user_data !== null) throw userDataUnsupported();
  if (request.workload_type === 'infra') throw workloadNotAllowed();
  const { region, image, sshKeys } = await referencesOf(deps, tx, orgId, request);
  const shortfalls = imageShortfalls(image, request);
  if (shortfalls.length > 0) throw imageRequirementsNotMet(`The image ${image.id} needs ${imageNeeds(image, shortfalls)}.`, shortfalls);

  // The name's check is the INSERT itself (the live-name index; a concurrent insert of the
  // same name is waited for), and the row is read back by it. The budget's read and the
  // operation go with it, in one round trip: should the name be taken or the budget refuse,
  // the operation goes with the rollback, and a taken name is still the answer that comes first.
  const id = randomUUID();
  const inserted = runPrepared<VmRow>(tx, INSERT_VM, [
    id,
    orgId,
    request.name,
    region.id,
    region.disk_redundancy,
    request.storage_pool,
    request.network_profile,
    image.id,
    image.name,
    request.vcpus,
    request.memory_mb,
    request.disk_gb,
    JSON.stringify(sshKeys),
    JSON.stringify(request.labels ?? {}),
  ]);
  const budgetChecked = deps.budget.assertCanCreateBillable(tx, orgId);
  const queued = queue(tx, deps.maxAttempts, orgId, 'vm.create', { type: 'vm', id });
  // Answered after the insert's: when that refuses, theirs are not looked at.
  budgetChecked.catch(() => {});
  queued.catch(() => {});
  let vm: VmRow | undefined;
  try {
    vm = (await inserted).rows[0];
  } catch (error) {
    // Two requests for one name at once: the unique index lets one through.
    if ((error as { code?: string }).code === '23505') throw vmNameTaken(request.name, region.id);
    throw error;
  }
  if (!vm) throw vmNameTaken(request.name, region.id);
  const [, operation] = await Promise.all([budgetChecked, queued]);
  return { vm, operation, before: vm };
}

export const startVm = (deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string) =>
  plainAction(deps, tx, { orgId, vmId }, 'start', 'vm.start', { desired_state: 'running' });

export const stopVm = (deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string) =>
  plainAction(deps, tx, { orgId, vmId }, 'stop', 'vm.stop', { desired_state: 'stopped' });

/** Also used by the scheduler, which checks the same rules before queuing. */
export const rebootVm = (deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string) =>
  plainAction(deps, tx, { orgId, vmId }, 'reboot', 'vm.reboot', { state: 'rebooting' });

export const rescueVm = (deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string) =>
  plainAction(deps, tx, { orgId, vmId }, 'rescue', 'vm.rescue', { desired_state: 'rescue' });

export const unrescueVm = (deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string) =>
  plainAction(deps, tx, { orgId, vmId }, 'unrescue', 'vm.unrescue', { desired_state: 'running' });

export async function resizeVm(
  deps: VmServiceDependencies,
  tx: PoolClient,
  orgId: string,
  vmId: string,
  size: VmResizeRequest,
): Promise<VmChange> {
  const vm = await lockLive(tx, orgId, vmId);
  assertAllowed(vm, 'resize');
  if (size.disk_gb < vm.disk_gb) throw diskShrinkNotAllowed(vm);
  // An image the operator has since removed from the catalogue sets no minimums.
  const image = deps.catalogue.image(vm.region_id, vm.image_id);
  const shortfalls = image ? imageShortfalls(image, size) : [];
  if (image && shortfalls.length > 0)
    throw imageRequirementsNotMet(`The instance's image ${image.id} needs ${imageNeeds(image, shortfalls)}.`, shortfalls);
  await assertStateAccepts(tx, vm, 'resize');
  if (size.vcpus === vm.vcpus && size.memory_mb === vm.memory_mb && size.disk_gb === vm.disk_gb) {
    // The current size: accepted, and nothing to do.
    const operation = await recordFinishedOperation(tx, {
      orgId,
      type: 'vm.resize',
      resourceType: 'vm',
      resourceId: vm.id,
      maxAttempts: deps.maxAttempts,
    });
    return { vm, operation, before: vm };
  }
  return apply(
    deps,
    tx,
    vm,
    'vm.resize',
    { state: 'resizing', vcpus: size.vcpus, memory_mb: size.memory_mb, disk_gb: size.disk_gb },
    { previous: { state: vm.state, vcpus: vm.vcpus, memory_mb: vm.memory_mb, disk_gb: vm.disk_gb } },
  );
}

export async function rebuildVm(
  deps: VmServiceDependencies,
  tx: PoolClient,
  orgId: string,
  vmId: string,
  imageId: string,
): Promise<VmChange> {
  const vm = await lockLive(tx, orgId, vmId);
  assertAllowed(vm, 'rebuild');
  const image = deps.catalogue.image(vm.region_id, imageId);
  if (!image)
    throw invalidReference([
      { pointer: '/image_id', detail: `no image ${imageId} in region ${vm.region_id}; see listImages?region=${vm.region_id}` },
    ]);
  const shortfalls = imageShortfalls(image, vm);
  if (shortfalls.length > 0) {
    const parts = shortfalls.map((error) =>
      error.pointer === '/disk_gb'
        ? `${image.min_disk_gb} GB of disk; this instance has ${vm.disk_gb} GB`
        : `${image.min_ram_mb} MB of memory; this instance has ${vm.memory_mb} MB`,
    );
    throw imageRequirementsNotMet(
      `The image ${image.id} needs at least ${parts.join(', and ')}. Resize it first.`,
      shortfalls.map((error) => ({
        pointer: '/image_id',
        detail:
          error.pointer === '/disk_gb'
            ? `${image.id} needs min_disk_gb ${image.min_disk_gb}`
            : `${image.id} needs min_ram_mb ${image.min_ram_mb}`,
      })),
    );
  }
  await assertStateAccepts(tx, vm, 'rebuild');
  return apply(
    deps,
    tx,
    vm,
    'vm.rebuild',
    { state: 'rebuilding', desired_state: 'running', image_id: image.id, image_name: image.name },
    { previous: { state: vm.state, desired_state: vm.desired_state, image_id: vm.image_id, image_name: vm.image_name } },
  );
}

/** Refusals in the contract's order: protected, then policy, then state. */
export async function deleteVm(deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string): Promise<VmChange> {
  const vm = await lockLive(tx, orgId, vmId);
  if (vm.protected) throw vmProtected(vm, vm.protected_by === 'operator');
  assertAllowed(vm, 'delete');
  await assertStateAccepts(tx, vm, 'delete');
  return apply(
    deps,
    tx,
    vm,
    'vm.delete',
    { state: 'deleting', desired_state: 'deleted' },
    { previous: { state: vm.state, desired_state: vm.desired_state } },
  );
}

/** Not one change at a time: a new set queued behind another is applied after it, and the last wins. */
export async function setVmFirewall(
  deps: VmServiceDependencies,
  tx: PoolClient,
  orgId: string,
  vmId: string,
  inbound: FirewallRule[],
): Promise<VmChange> {
  const vm = await lockLive(tx, orgId, vmId);
  assertAllowed(vm, 'firewall');
  const rules = checkFirewallRules(inbound);
  if (vm.state === 'deleting') throw vmStateConflict(`Instance ${vm.id} (${vm.name}) is deleting; its firewall can no longer be changed.`);
  return apply(deps, tx, vm, 'vm.firewall', { firewall: rules }, { rules, previous_rules: vm.firewall });
}

export async function requestVmConsole(deps: VmServiceDependencies, tx: PoolClient, orgId: string, vmId: string): Promise<VmChange> {
  const vm = await lockLive(tx, orgId, vmId);
  assertAllowed(vm, 'console');
  if (vm.state !== 'running' && vm.state !== 'rescue')
    throw vmStateConflict(`Instance ${vm.id} (${vm.name}) is ${vm.state}; a console needs state running or rescue.`);
  return apply(deps, tx, vm, 'vm.console', {});
}

/** The customer's switch (an owner's; the caller checks the role). */
export async function setVmProtection(tx: PoolClient, orgId: string, vmId: string, value: boolean): Promise<{ vm: VmRow; before: VmRow }> {
  const vm = await lockLive(tx, orgId, vmId);
  assertAllowed(vm, 'protection');
  if (vm.state === 'deleting')
    throw vmStateConflict(`Instance ${vm.id} (${vm.name}) is deleting; its protection can no longer be changed.`);
  if (vm.protected === value) return { vm, before: vm };
  return { vm: await updateVm(tx, vm.id, { protected: value, protected_by: value ? 'owner' : null }), before: vm };
}
