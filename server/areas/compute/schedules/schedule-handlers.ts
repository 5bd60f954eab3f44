import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { vmNotFound } from '../vms/vm-errors.ts';
import { listSchedules } from './schedule-rows.ts';
import { schedulingEnabled, toScheduledActionOut } from './schedule-rows.ts';
import type { createScheduleService } from './schedule-service.ts';
import { findAnyVm } from '../vms/vm-rows.ts';

export type ScheduleOperations = 'scheduleVmRestart' | 'listVmScheduledActions' | 'cancelScheduledAction';

/** Handlers of scheduled restarts. */
export function scheduleHandlers({
  pool,
  orgClock,
  schedules,
}: {
  pool: Pool;
  /** A schedule's times are the organization's (a test clock moved forward moves them too). */
  orgClock: OrganizationClock;
  schedules: ReturnType<typeof createScheduleService>;
}): Pick<OperationHandlers<RequestContext>, ScheduleOperations> {
  const orgOf = (context: RequestContext) => context.principal.orgId;

  return {
    scheduleVmRestart: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const now = await orgClock.now(tx, orgOf(context));
        const schedule = toScheduledActionOut(await schedules.create(tx, orgOf(context), request.path.vm_id, request.body, now));
        return {
          response: { status: 201 as const, body: schedule },
          audit: { resourceId: schedule.id, after: schedule },
        };
      }),

    async listVmScheduledActions(request, context) {
      const orgId = orgOf(context);
      // Schedules outlive their instance: 404 only if the organization never had it.
      if (!(await findAnyVm(pool, orgId, request.path.vm_id))) throw vmNotFound(request.path.vm_id);
      const page = await listSchedules(pool, orgId, request.path.vm_id, request.query, toScheduledActionOut);
      return { status: 200, body: { ...page, scheduling_enabled: await schedulingEnabled(pool, orgId) } };
    },

    cancelScheduledAction: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const { schedule, before } = await schedules.cancel(tx, orgOf(context), request.path.schedule_id);
        const after = toScheduledActionOut(schedule);
        return {
          response: { status: 200 as const, body: after },
          audit: { resourceId: after.id, before: toScheduledActionOut(before), after },
        };
      }),
  };
}
