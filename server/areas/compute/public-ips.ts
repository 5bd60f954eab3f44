import { randomUUID } from 'node:crypto';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../core/clock.ts';
import type { Pool, PoolClient, Queryable } from '../../db/pool.ts';
import { updateRow } from '../../db/update-row.ts';
import { TransientBackendError } from '../../drivers/errors.ts';
import type { HypervisorDriver } from '../../drivers/hypervisor.ts';
import type { Executor, Executors, OperationFailure } from '../../engine/executor.ts';
import type { OperationRow } from '../../engine/operation-record.ts';
import { invalidReference } from '../../core/errors.ts';
import type { BudgetGuard } from '../area.ts';
import type { Catalogue } from './catalogue.ts';
import { publicIpNotFound, publicIpRegionMismatch, publicIpStateConflict, vmStateConflict } from './errors.ts';
import { queue } from './operations.ts';
import type { VmService } from './vm-service.ts';
import { findLiveVm, recordObservation, vmById } from './vms.ts';

type PublicIpOut = components['schemas']['PublicIpOut'];
type PublicIpState = PublicIpOut['state'];

export interface PublicIpRow {
  id: string;
  org_id: string;
  region_id: string;
  address: string | null;
  state: PublicIpState;
  vm_id: string | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  released_at: Date | null;
}

export const toPublicIpOut = (row: PublicIpRow): PublicIpOut => ({
  id: row.id,
  region_id: row.region_id,
  address: row.address,
  state: row.state,
  vm_id: row.vm_id,
  error: row.error,
  created_at: iso(row.created_at),
});

export interface PublicIpChange {
  publicIp: PublicIpRow;
  operation: OperationRow;
  before: PublicIpRow | null;
}

async function findPublicIp(db: Queryable, orgId: string, publicIpId: string, lock = false): Promise<PublicIpRow | undefined> {
  const { rows } = await db.query<PublicIpRow>(
    `SELECT * FROM public_ips WHERE org_id = $1 AND id = $2 AND released_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    [orgId, publicIpId],
  );
  return rows[0];
}

async function updatePublicIp(db: Queryable, id: string, changes: Partial<Pick<PublicIpRow, 'address' | 'state' | 'vm_id' | 'error' | 'released_at'>>): Promise<PublicIpRow> {
  return (await updateRow<PublicIpRow>(db, 'public_ips', id, changes, ['address', 'state', 'vm_id', 'error', 'released_at']))!;
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
export function createPublicIpService({ catalogue, budget, maxAttempts, vms }: { catalogue: Catalogue; budget: BudgetGuard; maxAttempts: number; vms: VmService }) {
  const apply = async (tx: PoolClient, before: PublicIpRow, type: OperationRow['type'], changes: Parameters<typeof updatePublicIp>[2], payload: Record<string, unknown> = {}): Promise<PublicIpChange> => {
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
      if (!catalogue.region(regionId)) throw invalidReference([{ pointer: '/region', detail: `no region ${regionId}; list the regions with listRegions` }]);
      await budget.assertCanCreateBillable(tx, orgId);
      const { rows } = await tx.query<PublicIpRow>(`INSERT INTO public_ips (id, org_id, region_id, state) VALUES ($1, $2, $3, 'pending') RETURNING *`, [randomUUID(), orgId, regionId]);
      const publicIp = rows[0]!;
      const operation = await queue(tx, maxAttempts, orgId, 'ip.allocate', { type: 'public_ip', id: publicIp.id });
      return { publicIp, operation, before: null };
    },

    /** Refusals in the contract's order. */
    async associate(tx: PoolClient, orgId: string, publicIpId: string, vmId: string): Promise<PublicIpChange> {
      const publicIp = await lock(tx, orgId, publicIpId);
      if (publicIp.state !== 'allocated') {
        const advice = publicIp.state === 'associated' ? ' Disassociate it first.' : publicIp.state === 'error' ? ' Release it.' : ' Wait for its operation to finish.';
        throw publicIpStateConflict(`Public IP ${publicIp.id} is ${publicIp.state}; only an allocated public IP can be associated.${advice}`);
      }
      const vm = await findLiveVm(tx, orgId, vmId, true);
      if (!vm) throw invalidReference([{ pointer: '/vm_id', detail: `no instance ${vmId} in this organization` }]);
      if (vm.region_id !== publicIp.region_id) throw publicIpRegionMismatch(publicIp, vm);
      vms.assertAllowed(vm, 'public_ip');
      if (vm.state === 'deleting' || vm.state === 'error') throw vmStateConflict(`Instance ${vm.id} is ${vm.state}; a public IP cannot be associated with it.`);
      const { rows: held } = await tx.query<{ id: string }>('SELECT id FROM public_ips WHERE vm_id = $1 AND released_at IS NULL', [vm.id]);
      if (held[0]) throw publicIpStateConflict(`Instance ${vm.id} already has public IP ${held[0].id}; an instance holds at most one.`);
      return apply(tx, publicIp, 'ip.associate', { state: 'associating', vm_id: vm.id });
    },

    async disassociate(tx: PoolClient, orgId: string, publicIpId: string): Promise<PublicIpChange> {
      const publicIp = await lock(tx, orgId, publicIpId);
      if (publicIp.state !== 'associated') throw publicIpStateConflict(`Public IP ${publicIp.id} is ${publicIp.state}; only an associated public IP can be disassociated.`);
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
      await updatePublicIp(tx, operation.resource_id, routed ? { state: 'associated', error: null } : { state: 'allocated', vm_id: null, error: null });
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
      await updatePublicIp(tx, operation.resource_id, { state: (operation.payload.previous_state as PublicIpState | undefined) ?? 'allocated' });
    },
  };

  return { 'ip.allocate': allocate, 'ip.associate': associate, 'ip.disassociate': disassociate, 'ip.release': release };
}
