import type { OrganizationClock } from '../../../core/test-clocks.ts';
import type { Pool, PoolClient } from '../../../db/pool.ts';
import { TransientBackendError } from '../../../drivers/errors.ts';
import type { HypervisorDriver, ServerRef, ServerReport, ServerSpec } from '../../../drivers/hypervisor.ts';
import { lockingRows, type Executor, type Executors, type OperationFailure } from '../../../engine/executor.ts';
import type { OperationRow } from '../../../engine/operation-record.ts';
import type { Catalogue } from '../catalogue/catalogue.ts';
import type { VmState } from './vm-policy.ts';
import { batchedLookup } from '../../../db/batched-lookup.ts';
import { failureFields, markCreated, NO_FAILURE, recordObservation, updateVm, vmsByIds, type VmRow } from './vm-rows.ts';

const serverOf = (vm: VmRow): ServerRef => ({ serverId: vm.id, name: vm.name });

/** The instance an operation works on, locked for the update that follows it. */
async function lockVm(tx: PoolClient, operation: OperationRow): Promise<VmRow> {
  const { rows } = await tx.query<VmRow>('SELECT * FROM vms WHERE id = $1 FOR UPDATE', [operation.resource_id]);
  if (!rows[0]) throw new Error(`operation ${operation.id} names instance ${operation.resource_id}, which does not exist`);
  return rows[0];
}

/** Per pool: the instances of the attempts a claim starts together are read in one query. */
const vmLookups = new WeakMap<Pool, (vmId: string) => Promise<VmRow | undefined>>();

async function loadVm(pool: Pool, operation: OperationRow): Promise<VmRow> {
  let lookup = vmLookups.get(pool);
  if (!lookup) {
    lookup = batchedLookup((vmIds: string[]) => vmsByIds(pool, vmIds));
    vmLookups.set(pool, lookup);
  }
  const vm = await lookup(operation.resource_id);
  if (!vm) throw new Error(`operation ${operation.id} names instance ${operation.resource_id}, which does not exist`);
  return vm;
}

interface Previous {
  state: VmState;
  desired_state: VmRow['desired_state'];
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
  image_id: string;
  image_name: string;
}
const previousOf = (operation: OperationRow) => (operation.payload.previous ?? {}) as Partial<Previous>;

/**
 * A power change (start, stop, rescue, unrescue) sets desired_state at once and state when it
 * succeeds. If the backend fails it, nothing changed on the server: desired_state falls back to
 * the state and the failure is recorded. Cancelled while queued, the request is undone the same way.
 */
function powerChange(pool: Pool, call: (vm: VmRow) => Promise<ServerReport>, reached: VmState): Executor<ServerReport> {
  return {
    perform: async (operation) => call(await loadVm(pool, operation)),
    async succeeded(tx, operation, report) {
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { state: reached, ...NO_FAILURE });
      await recordObservation(tx, operation.resource_id, report, 'operation');
    },
    async failed(tx, operation, failure) {
      const vm = await lockVm(tx, operation);
      await updateVm(tx, vm.id, {
        desired_state: vm.state === 'error' ? vm.desired_state : (vm.state as VmRow['desired_state']),
        ...failureFields(failure),
      });
    },
    async cancelled(tx, operation) {
      const vm = await lockVm(tx, operation);
      await updateVm(tx, vm.id, { desired_state: vm.state as VmRow['desired_state'] });
    },
  };
}

/**
 * A transitional change (reboot, resize, rebuild) has its own state while it runs. If the backend
 * fails it, the server's condition is unknown: the instance is `error` (a rebuild recovers it).
 */
function transitional(
  pool: Pool,
  call: (vm: VmRow, operation: OperationRow) => Promise<ServerReport>,
  reachedOf: (operation: OperationRow) => VmState,
  undo: (operation: OperationRow, vm: VmRow) => Partial<VmRow>,
): Executor<ServerReport> {
  return {
    perform: async (operation) => call(await loadVm(pool, operation), operation),
    async succeeded(tx, operation, report) {
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { state: reachedOf(operation), ...NO_FAILURE });
      await recordObservation(tx, operation.resource_id, report, 'operation');
    },
    async failed(tx, operation, failure) {
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { state: 'error', ...failureFields(failure) });
    },
    async cancelled(tx, operation) {
      const vm = await lockVm(tx, operation);
      await updateVm(tx, vm.id, undo(operation, vm));
    },
  };
}

/** A change beside the instance's state (firewall, console): its failure is recorded, its success clears an earlier one. */
async function recordSideOutcome(tx: PoolClient, operation: OperationRow, failure?: OperationFailure): Promise<void> {
  const vm = await lockVm(tx, operation);
  if (vm.deleted_at) return;
  // An instance in error keeps the failure that put it there.
  if (failure) await updateVm(tx, vm.id, failureFields(failure));
  else if (vm.state !== 'error' && vm.error_class !== null) await updateVm(tx, vm.id, NO_FAILURE);
}

/** Executors of the instance operations, carried out by the hypervisor driver. */
/** The operation types of instances. */
export type VmOperationType =
  | 'vm.create'
  | 'vm.start'
  | 'vm.stop'
  | 'vm.reboot'
  | 'vm.resize'
  | 'vm.rebuild'
  | 'vm.rescue'
  | 'vm.unrescue'
  | 'vm.delete'
  | 'vm.firewall'
  | 'vm.console';

export function vmExecutors(
  pool: Pool,
  hypervisor: HypervisorDriver,
  catalogue: Catalogue,
  orgClock: OrganizationClock,
): Executors<VmOperationType> {
  /** What the hypervisor needs to make the instance's server, from the instance as it is now. */
  const specOf = (vm: VmRow): ServerSpec => {
    const region = catalogue.region(vm.region_id);
    const profile = region?.network_profiles.find((entry) => entry.id === vm.network_profile_id);
    return {
      ...serverOf(vm),
      regionId: vm.region_id,
      storagePoolId: vm.storage_pool_id,
      networkProfileId: vm.network_profile_id,
      // A region or profile the operator has since removed from the catalogue: the defaults.
      publicNetwork: profile?.public_network ?? true,
      consoleType: region?.console_type ?? 'vnc',
      imageId: vm.image_id,
      vcpus: vm.vcpus,
      memoryMb: vm.memory_mb,
      diskGb: vm.disk_gb,
      sshKeys: vm.ssh_keys,
      // The rules as set now: a firewall change made while creating is included.
      firewall: vm.firewall,
    };
  };

  const create: Executor<ServerReport> = {
    perform: async (operation) => hypervisor.createServer(specOf(await loadVm(pool, operation))),
    succeedsInOneStatement: true,
    async succeeded(tx, operation, report) {
      // One UPDATE, which takes the row's lock itself: no separate lockVm, updateVm and recordObservation.
      if (!(await markCreated(tx, operation.resource_id, report))) {
        throw new Error(`operation ${operation.id} names instance ${operation.resource_id}, which does not exist`);
      }
    },
    async failed(tx, operation, failure) {
      await lockVm(tx, operation);
      // It keeps its name until deleted; a rebuild can recover it.
      await updateVm(tx, operation.resource_id, { state: 'error', ...failureFields(failure) });
    },
    async cancelled(tx, operation) {
      // A creation cancelled before it started is removed, and its name is free again.
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { desired_state: 'deleted', deleted_at: new Date() });
    },
  };

  const remove: Executor<void> = {
    async perform(operation) {
      const vm = await loadVm(pool, operation);
      // Its public IPs are disassociated, not released: they stay with the organization.
      const { rows } = await pool.query<{ id: string }>('SELECT id FROM public_ips WHERE vm_id = $1 AND released_at IS NULL', [vm.id]);
      for (const ip of rows) await hypervisor.detachAddress({ addressId: ip.id }, serverOf(vm));
      await hypervisor.deleteServer(serverOf(vm));
    },
    async succeeded(tx, operation) {
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { deleted_at: new Date(), ...NO_FAILURE });
      await tx.query(
        `UPDATE public_ips SET state = 'allocated', vm_id = NULL, updated_at = now()
         WHERE vm_id = $1 AND state = 'associated' AND released_at IS NULL`,
        [operation.resource_id],
      );
    },
    async failed(tx, operation, failure) {
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { state: 'error', ...failureFields(failure) });
    },
    async cancelled(tx, operation) {
      const previous = previousOf(operation);
      await lockVm(tx, operation);
      await updateVm(tx, operation.resource_id, { state: previous.state ?? 'error', desired_state: previous.desired_state ?? 'running' });
    },
  };

  const firewall: Executor<void> = {
    async perform(operation) {
      const vm = await loadVm(pool, operation);
      // The server is going away: nothing to apply.
      if (vm.deleted_at || vm.state === 'deleting') return;
      if (vm.state === 'creating') throw new TransientBackendError('compute backend', 'the server is still being created');
      // The set stored now, not the one of this request: whichever operation runs last applies
      // the latest set, so the last set wins even if operations finish out of order.
      await hypervisor.setFirewall(serverOf(vm), vm.firewall);
    },
    succeeded: (tx, operation) => recordSideOutcome(tx, operation),
    failed: (tx, operation, failure) => recordSideOutcome(tx, operation, failure),
    async cancelled(tx, operation) {
      const vm = await lockVm(tx, operation);
      // Undone only if no later set has replaced it.
      if (JSON.stringify(vm.firewall) === JSON.stringify(operation.payload.rules)) {
        await updateVm(tx, vm.id, { firewall: (operation.payload.previous_rules ?? []) as VmRow['firewall'] });
      }
    },
  };

  const prepareConsole: Executor<{ consoleType: 'vnc' | 'serial' }> = {
    perform: async (operation) => hypervisor.prepareConsole(serverOf(await loadVm(pool, operation)), operation.id),
    async succeeded(tx, operation, session) {
      // The instance is locked FOR UPDATE first: the insert's foreign key would take a weaker lock
      // on it, and two transactions upgrading their weak locks deadlock.
      await recordSideOutcome(tx, operation);
      await tx.query(
        `INSERT INTO console_sessions (operation_id, org_id, vm_id, console_type, prepared_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (operation_id) DO NOTHING`,
        // By the organization's clock, as the collect window that starts here is read.
        [operation.id, operation.org_id, operation.resource_id, session.consoleType, await orgClock.now(tx, operation.org_id)],
      );
    },
    failed: (tx, operation, failure) => recordSideOutcome(tx, operation, failure),
    async cancelled() {
      // Nothing was prepared.
    },
  };

  return lockingRows('vms', {
    'vm.create': create,
    'vm.start': powerChange(pool, (vm) => hypervisor.startServer(serverOf(vm)), 'running'),
    'vm.stop': powerChange(pool, (vm) => hypervisor.stopServer(serverOf(vm)), 'stopped'),
    'vm.rescue': powerChange(pool, (vm) => hypervisor.rescueServer(serverOf(vm)), 'rescue'),
    'vm.unrescue': powerChange(pool, (vm) => hypervisor.unrescueServer(serverOf(vm)), 'running'),
    'vm.reboot': transitional(
      pool,
      (vm) => hypervisor.rebootServer(serverOf(vm)),
      () => 'running',
      () => ({ state: 'running' }),
    ),
    'vm.resize': transitional(
      pool,
      (vm) => hypervisor.resizeServer(serverOf(vm), { vcpus: vm.vcpus, memoryMb: vm.memory_mb, diskGb: vm.disk_gb }),
      // Back in the state it had before: running or stopped.
      (operation) => previousOf(operation).state ?? 'running',
      (operation, vm) => {
        const previous = previousOf(operation);
        return {
          state: previous.state ?? 'running',
          vcpus: previous.vcpus ?? vm.vcpus,
          memory_mb: previous.memory_mb ?? vm.memory_mb,
          disk_gb: previous.disk_gb ?? vm.disk_gb,
        };
      },
    ),
    'vm.rebuild': transitional(
      pool,
      // An instance whose creation failed has no server yet: the rebuild creates it, with the new image.
      async (vm) =>
        (await hypervisor.describeServers([vm.id])).length > 0
          ? hypervisor.rebuildServer(serverOf(vm), { imageId: vm.image_id, sshKeys: vm.ssh_keys })
          : hypervisor.createServer(specOf(vm)),
      () => 'running',
      (operation, vm) => {
        const previous = previousOf(operation);
        return {
          state: previous.state ?? 'error',
          desired_state: previous.desired_state ?? vm.desired_state,
          image_id: previous.image_id ?? vm.image_id,
          image_name: previous.image_name ?? vm.image_name,
        };
      },
    ),
    'vm.delete': remove,
    'vm.firewall': firewall,
    'vm.console': prepareConsole,
  });
}
