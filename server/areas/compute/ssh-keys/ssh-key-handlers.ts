import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { listSshKeys } from './ssh-key-rows.ts';
import { toSshKeyOut } from './ssh-key-rows.ts';
import { createSshKey, deleteSshKey, fingerprintOf } from './ssh-key-service.ts';

/** Handlers of SSH keys. */
export function sshKeyHandlers({
  pool,
}: {
  pool: Pool;
}): Pick<OperationHandlers<RequestContext>, 'listSshKeys' | 'createSshKey' | 'deleteSshKey'> {
  const orgOf = (context: RequestContext) => context.principal.orgId;

  return {
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
