import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite, type WriteOutcome } from '../../../core/write.ts';
import { withTransaction, type Pool } from '../../../db/pool.ts';
import { toOperationRef } from '../../../engine/operation-record.ts';
import { forbidden } from '../../../core/errors.ts';
import { collectConsole, webSocketBase } from '../console/console-urls.ts';
import { vmNotFound } from './vm-errors.ts';
import { listVms } from './vm-rows.ts';
import { VmAnswers } from './vm-answers.ts';
import {
  createVm,
  deleteVm,
  rebootVm,
  rebuildVm,
  requestVmConsole,
  rescueVm,
  resizeVm,
  setVmFirewall,
  setVmProtection,
  startVm,
  stopVm,
  unrescueVm,
  type VmChange,
  type VmServiceDependencies,
} from './vm-service.ts';
import { findLiveVm, toVmOut } from './vm-rows.ts';

export type VmOperations =
  | 'createVm'
  | 'listVms'
  | 'getVm'
  | 'deleteVm'
  | 'startVm'
  | 'stopVm'
  | 'rebootVm'
  | 'resizeVm'
  | 'rebuildVm'
  | 'rescueVm'
  | 'unrescueVm'
  | 'setVmProtection'
  | 'getVmFirewall'
  | 'setVmFirewall'
  | 'requestConsole'
  | 'collectConsole';

/** The 202 answer of an accepted change, with its audit event. */
function accepted(
  change: VmChange,
): WriteOutcome<{ status: 202; body: { operation: ReturnType<typeof toOperationRef>; vm: ReturnType<typeof toVmOut> } }> {
  const vm = toVmOut(change.vm);
  return {
    response: { status: 202, body: { operation: toOperationRef(change.operation), vm } },
    audit: {
      resourceId: vm.id,
      before: change.before === change.vm ? null : toVmOut(change.before),
      after: vm,
      operationId: change.operation.id,
    },
  };
}

/** Query values that may come once (a string) or repeated (an array). */
const many = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** Handlers of instances, their actions, firewall, protection and console: parse, call the service, answer. */
export function vmHandlers({
  pool,
  orgClock,
  publicBaseUrl,
  vms,
}: {
  pool: Pool;
  orgClock: OrganizationClock;
  /** The address clients reach the platform at (the console gateway's is derived from it). */
  publicBaseUrl: () => string;
  /** What the instances' rules need (vm-service.ts). */
  vms: VmServiceDependencies;
}): Pick<OperationHandlers<RequestContext>, VmOperations> {
  const orgOf = (context: RequestContext) => context.principal.orgId;
  // The answers of the instances this process read, by row version.
  const answers = new VmAnswers();

  return {
    // Grouped: creations arriving together share a transaction (core/write-groups.ts).
    createVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await createVm(vms, tx, orgOf(context), request.body)), { grouped: true }),

    async listVms(request, context) {
      const { region, state, label, limit, cursor } = request.query;
      const listed = await listVms(pool, orgOf(context), { region, state, labels: many(label) }, { limit, cursor });
      return { status: 200, body: { items: await answers.of(pool, orgOf(context), listed.items), next_cursor: listed.next_cursor } };
    },

    async getVm(request, context) {
      const vm = await answers.one(pool, orgOf(context), request.path.vm_id);
      if (!vm) throw vmNotFound(request.path.vm_id);
      return { status: 200, body: vm };
    },

    deleteVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await deleteVm(vms, tx, orgOf(context), request.path.vm_id))),
    startVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await startVm(vms, tx, orgOf(context), request.path.vm_id))),
    stopVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await stopVm(vms, tx, orgOf(context), request.path.vm_id))),
    rebootVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await rebootVm(vms, tx, orgOf(context), request.path.vm_id))),
    resizeVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await resizeVm(vms, tx, orgOf(context), request.path.vm_id, request.body))),
    rebuildVm: (request, context) =>
      performWrite(pool, context, async (tx) =>
        accepted(await rebuildVm(vms, tx, orgOf(context), request.path.vm_id, request.body.image_id)),
      ),
    rescueVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await rescueVm(vms, tx, orgOf(context), request.path.vm_id))),
    unrescueVm: (request, context) =>
      performWrite(pool, context, async (tx) => accepted(await unrescueVm(vms, tx, orgOf(context), request.path.vm_id))),

    async setVmProtection(request, context) {
      // Who may switch comes before anything about the instance.
      if (context.principal.role !== 'owner') throw forbidden('Only an owner of the organization may switch instance protection.');
      return performWrite(pool, context, async (tx) => {
        const { vm, before } = await setVmProtection(tx, orgOf(context), request.path.vm_id, request.body.protected);
        const body = toVmOut(vm);
        return {
          response: { status: 200 as const, body },
          audit: { resourceId: vm.id, before: toVmOut(before), after: body },
        };
      });
    },

    async getVmFirewall(request, context) {
      const vm = await findLiveVm(pool, orgOf(context), request.path.vm_id);
      if (!vm) throw vmNotFound(request.path.vm_id);
      return { status: 200, body: { inbound: vm.firewall } };
    },

    async setVmFirewall(request, context) {
      return performWrite(pool, context, async (tx) => {
        const change = await setVmFirewall(vms, tx, orgOf(context), request.path.vm_id, request.body.inbound);
        const firewall = { inbound: change.vm.firewall };
        return {
          response: { status: 202 as const, body: { operation: toOperationRef(change.operation), firewall } },
          audit: {
            resourceId: change.vm.id,
            before: { inbound: change.before.firewall },
            after: firewall,
            operationId: change.operation.id,
          },
        };
      });
    },

    requestConsole: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const change = await requestVmConsole(vms, tx, orgOf(context), request.path.vm_id);
        return {
          response: { status: 202 as const, body: { operation: toOperationRef(change.operation) } },
          audit: { resourceId: change.vm.id, operationId: change.operation.id },
        };
      }),

    async collectConsole(request, context) {
      const orgId = orgOf(context);
      const response = await withTransaction(pool, async (tx) => {
        if (!(await findLiveVm(tx, orgId, request.path.vm_id))) throw vmNotFound(request.path.vm_id);
        const collected = await collectConsole(
          tx,
          { orgClock },
          {
            orgId,
            vmId: request.path.vm_id,
            operationId: request.query.operation,
            tokenId: context.principal.tokenId,
            gatewayBase: webSocketBase(publicBaseUrl()),
          },
        );
        // Handing out console access is recorded like a change (the URL itself never is).
        await context.audit.succeeded(tx, {
          resourceId: request.path.vm_id,
          after: { console_type: collected.console_type, expires_in_seconds: collected.expires_in_seconds },
          operationId: request.query.operation,
        });
        return { status: 200 as const, body: collected };
      });
      context.audit.committed();
      return response;
    },
  };
}
