import type { OperationHandlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { performWrite } from '../../core/write.ts';
import type { Pool } from '../../db/pool.ts';
import { toOperationRef } from '../../engine/operation-record.ts';
import type { Catalogue } from './catalogue.ts';
import { publicIpNotFound, regionNotFound } from './errors.ts';
import { catalogueListPage, listName, listPublicIps, listSshKeys } from './lists.ts';
import { toPublicIpOut, type createPublicIpService, type PublicIpChange } from './public-ips.ts';
import { createSshKey, deleteSshKey, fingerprintOf, toSshKeyOut } from './ssh-keys.ts';

export type NetworkOperations =
  | 'listRegions'
  | 'listImages'
  | 'listPublicIps'
  | 'allocatePublicIp'
  | 'getPublicIp'
  | 'releasePublicIp'
  | 'associatePublicIp'
  | 'disassociatePublicIp'
  | 'listSshKeys'
  | 'createSshKey'
  | 'deleteSshKey';

function accepted(change: PublicIpChange) {
  const publicIp = toPublicIpOut(change.publicIp);
  return {
    response: { status: 202 as const, body: { operation: toOperationRef(change.operation), public_ip: publicIp } },
    audit: {
      resourceId: publicIp.id,
      before: change.before ? toPublicIpOut(change.before) : null,
      after: publicIp,
      operationId: change.operation.id,
    },
  };
}

/** Handlers of the catalogue, public IPs and SSH keys. */
export function networkHandlers({ pool, catalogue, publicIps }: { pool: Pool; catalogue: Catalogue; publicIps: ReturnType<typeof createPublicIpService> }): Pick<OperationHandlers<RequestContext>, NetworkOperations> {
  const orgOf = (context: RequestContext) => context.principal.orgId;

  return {
    async listRegions(request) {
      const body = catalogueListPage(listName('regions'), catalogue.regions, request.query, (region) => ({
        id: region.id,
        name: region.name,
        disk_redundancy: region.disk_redundancy,
        storage_pools: region.storage_pools.map(({ id, name }) => ({ id, name })),
        network_profiles: region.network_profiles.map(({ id, name }) => ({ id, name })),
      }));
      return { status: 200, body };
    },

    async listImages(request) {
      const region = catalogue.region(request.query.region);
      if (!region) throw regionNotFound(request.query.region);
      const body = catalogueListPage(listName('images', { region: region.id }), region.images, request.query, (image) => ({ ...image }));
      return { status: 200, body };
    },

    async listPublicIps(request, context) {
      const { region, limit, cursor } = request.query;
      return { status: 200, body: await listPublicIps(pool, orgOf(context), region, { limit, cursor }, toPublicIpOut) };
    },

    allocatePublicIp: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await publicIps.allocate(tx, orgOf(context), request.body.region))),

    async getPublicIp(request, context) {
      const publicIp = await publicIps.find(pool, orgOf(context), request.path.public_ip_id);
      if (!publicIp) throw publicIpNotFound(request.path.public_ip_id);
      return { status: 200, body: toPublicIpOut(publicIp) };
    },

    releasePublicIp: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await publicIps.release(tx, orgOf(context), request.path.public_ip_id))),

    associatePublicIp: (request, context) =>
      performWrite(pool, context, async (tx) =>
        accepted(await publicIps.associate(tx, orgOf(context), request.path.public_ip_id, request.body.vm_id)),
      ),

    disassociatePublicIp: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await publicIps.disassociate(tx, orgOf(context), request.path.public_ip_id))),

    async listSshKeys(request, context) {
      return { status: 200, body: await listSshKeys(pool, orgOf(context), request.query, toSshKeyOut) };
    },

    async createSshKey(request, context) {
      const fingerprint = fingerprintOf(request.body.public_key);
      return performWrite(pool, context, async (tx) => {
        const key = toSshKeyOut(await createSshKey(tx, orgOf(context), request.body.name, request.body.public_key, fingerprint));
        return { response: { status: 201 as const, body: key }, audit: { resourceId: key.id, after: key } };
      });
    },

    deleteSshKey: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const key = toSshKeyOut(await deleteSshKey(tx, orgOf(context), request.path.ssh_key_id));
        return { response: { status: 204 as const, body: undefined }, audit: { resourceId: key.id, before: key } };
      }),
  };
}
