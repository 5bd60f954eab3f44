import type { components } from '../../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import type { Queryable } from '../../../db/pool.ts';
import { listName, oldestFirst } from '../../../core/pagination.ts';

type ScheduledActionOut = components['schemas']['ScheduledActionOut'];

export interface ScheduleRow {
  id: string;
  org_id: string;
  vm_id: string;
  action: 'reboot';
  kind: ScheduledActionOut['kind'];
  run_at: Date | null;
  day_of_week: number | null;
  day_of_month: number | null;
  time_of_day: string | null;
  timezone: string;
  state: ScheduledActionOut['state'];
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_outcome: ScheduledActionOut['last_outcome'];
  last_outcome_detail: string | null;
  last_operation_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export const toScheduledActionOut = (row: ScheduleRow): ScheduledActionOut => ({
  id: row.id,
  vm_id: row.vm_id,
  action: row.action,
  kind: row.kind,
  run_at: isoOrNull(row.run_at),
  day_of_week: row.day_of_week,
  day_of_month: row.day_of_month,
  time_of_day: row.time_of_day,
  timezone: row.timezone,
  state: row.state,
  next_run_at: isoOrNull(row.next_run_at),
  last_run_at: isoOrNull(row.last_run_at),
  last_outcome: row.last_outcome,
  last_outcome_detail: row.last_outcome_detail,
  last_operation_id: row.last_operation_id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
});

/** Whether the organization allows scheduled restarts (an operator's switch). */
export async function schedulingEnabled(db: Queryable, orgId: string): Promise<boolean> {
  const { rows } = await db.query<{ scheduling_enabled: boolean }>('SELECT scheduling_enabled FROM orgs WHERE id = $1', [orgId]);
  return rows[0]?.scheduling_enabled ?? false;
}

export function listSchedules<Item>(
  db: Queryable,
  orgId: string,
  vmId: string,
  query: { cursor?: string; limit?: number },
  toItem: (row: ScheduleRow) => Item,
) {
  return oldestFirst<ScheduleRow, Item>(
    db,
    listName('scheduled-actions', { vm: vmId }),
    query,
    { table: 'scheduled_actions', where: 'org_id = $1 AND vm_id = $2', params: [orgId, vmId] },
    toItem,
  );
}
