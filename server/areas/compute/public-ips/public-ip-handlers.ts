import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { toOperationRef } from '../../../engine/operation-record.ts';
import { publicIpNotFound } from './public-ip-errors.ts';
import { listPublicIps } from './public-ip-rows.ts';
import { toPublicIpOut } from './public-ip-rows.ts';
import type { PublicIpChange, PublicIpService } from './public-ip-service.ts';

type PublicIpOperations =
  'listPublicIps' | 'allocatePublicIp' | 'getPublicIp' | 'releasePublicIp' | 'associatePublicIp' | 'disassociatePublicIp';

/** Every change answers 202 with the public IP and the operation that carries it out. */
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

/** Handlers of public IPs: read the request, call the service, answer. */
export function publicIpHandlers({
  pool,
  publicIps,
}: {
  pool: Pool;
  publicIps: PublicIpService;
}): Pick<OperationHandlers<RequestContext>, PublicIpOperations> {
  const orgOf = (context: RequestContext) => context.principal.orgId;

  return {
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
  };
}
