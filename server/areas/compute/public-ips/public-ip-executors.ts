import type { Pool, PoolClient } from '../../../db/pool.ts';
import { TransientBackendError } from '../../../drivers/errors.ts';
import type { HypervisorDriver } from '../../../drivers/hypervisor.ts';
import { lockingRows, type Executor, type Executors, type OperationFailure } from '../../../engine/executor.ts';
import type { OperationRow } from '../../../engine/operation-record.ts';
import { updatePublicIp, type PublicIpRow, type PublicIpState } from './public-ip-rows.ts';
import { recordObservation, vmById } from '../vms/vm-rows.ts';

/** The fixed phrase of a failed step; never the backend's words. */
function failurePhrase(failure: OperationFailure, step: string, type: string): string {
  switch (failure.errorClass) {
    case 'backend_rejected':
      return `The network backend refused the ${step}. [${type}]`;
    case 'backend_unavailable':
      return `The network backend was unavailable; the ${step} did not complete. [${type}]`;
    default:
      return `The ${step} failed because of an internal error. [${type}]`;
  }
}

async function lockIp(tx: PoolClient, operation: OperationRow): Promise<PublicIpRow> {
  const { rows } = await tx.query<PublicIpRow>('SELECT * FROM public_ips WHERE id = $1 FOR UPDATE', [operation.resource_id]);
  if (!rows[0]) throw new Error(`operation ${operation.id} names public IP ${operation.resource_id}, which does not exist`);
  return rows[0];
}

async function loadIp(pool: Pool, operation: OperationRow): Promise<PublicIpRow> {
  const { rows } = await pool.query<PublicIpRow>('SELECT * FROM public_ips WHERE id = $1', [operation.resource_id]);
  if (!rows[0]) throw new Error(`operation ${operation.id} names public IP ${operation.resource_id}, which does not exist`);
  return rows[0];
}

/** Executors of the public IP operations, carried out by the hypervisor driver's network side. */
/** The operation types of public IPs. */
export type PublicIpOperationType = 'ip.allocate' | 'ip.associate' | 'ip.disassociate' | 'ip.release';

export function publicIpExecutors(pool: Pool, hypervisor: HypervisorDriver): Executors<PublicIpOperationType> {
  const failed = (step: string) => async (tx: PoolClient, operation: OperationRow, failure: OperationFailure) => {
    await lockIp(tx, operation);
    // vm_id keeps the instance involved, if any.
    await updatePublicIp(tx, operation.resource_id, { state: 'error', error: failurePhrase(failure, step, operation.type) });
  };

  const allocate: Executor<{ address: string }> = {
    async perform(operation) {
      const ip = await loadIp(pool, operation);
      return hypervisor.allocateAddress({ addressId: ip.id, regionId: ip.region_id });
    },
    async succeeded(tx, operation, { address }) {
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, { state: 'allocated', address, error: null });
    },
    failed: failed('allocation'),
    async cancelled(tx, operation) {
      // Never allocated: the public IP is removed.
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, { released_at: new Date() });
    },
  };

  const associate: Executor<{ attached: boolean }> = {
    async perform(operation) {
      const ip = await loadIp(pool, operation);
      const vm = ip.vm_id ? await vmById(pool, ip.vm_id) : undefined;
      // The instance was deleted meanwhile: there is nothing to route to.
      if (!vm || vm.deleted_at || vm.state === 'deleting') return { attached: false };
      if (vm.state === 'creating') throw new TransientBackendError('compute backend', 'the server is still being created');
      const report = await hypervisor.attachAddress({ addressId: ip.id }, { serverId: vm.id, name: vm.name });
      await recordObservation(pool, vm.id, report, 'operation');
      return { attached: true };
    },
    async succeeded(tx, operation, { attached }) {
      const ip = await lockIp(tx, operation);
      // An instance deleted meanwhile has had its addresses detached by its vm.delete.
      const vm = ip.vm_id ? await vmById(tx, ip.vm_id) : undefined;
      const routed = attached && vm !== undefined && !vm.deleted_at && vm.state !== 'deleting';
      await updatePublicIp(
        tx,
        operation.resource_id,
        routed ? { state: 'associated', error: null } : { state: 'allocated', vm_id: null, error: null },
      );
    },
    failed: failed('association'),
    async cancelled(tx, operation) {
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, { state: 'allocated', vm_id: null });
    },
  };

  /** Stops routing the address to its instance, if it has one; safe to repeat. */
  const detach = async (ip: PublicIpRow): Promise<void> => {
    if (!ip.vm_id) return;
    const vm = await vmById(pool, ip.vm_id);
    if (!vm) return;
    const report = await hypervisor.detachAddress({ addressId: ip.id }, { serverId: vm.id, name: vm.name });
    if (report) await recordObservation(pool, vm.id, report, 'operation');
  };

  const disassociate: Executor<void> = {
    perform: async (operation) => detach(await loadIp(pool, operation)),
    async succeeded(tx, operation) {
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, { state: 'allocated', vm_id: null, error: null });
    },
    failed: failed('disassociation'),
    async cancelled(tx, operation) {
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, { state: 'associated' });
    },
  };

  const release: Executor<void> = {
    async perform(operation) {
      const ip = await loadIp(pool, operation);
      // Releasing an associated address disassociates it first, within this operation.
      await detach(ip);
      await hypervisor.releaseAddress({ addressId: ip.id });
    },
    async succeeded(tx, operation) {
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, { vm_id: null, released_at: new Date() });
    },
    failed: failed('release'),
    async cancelled(tx, operation) {
      await lockIp(tx, operation);
      await updatePublicIp(tx, operation.resource_id, {
        state: (operation.payload.previous_state as PublicIpState | undefined) ?? 'allocated',
      });
    },
  };

  return lockingRows('public_ips', {
    'ip.allocate': allocate,
    'ip.associate': associate,
    'ip.disassociate': disassociate,
    'ip.release': release,
  });
}
