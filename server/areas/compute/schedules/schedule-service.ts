import { randomUUID } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { validationFailed, type FieldError } from '../../../core/errors.ts';
import { scheduledActionStateConflict, scheduleNotFound, schedulingDisabled } from './schedule-errors.ts';
import { vmNotFound } from '../vms/vm-errors.ts';
import { isKnownTimezone, nextRunAfter, normaliseTimeOfDay, type Recurrence } from './schedule-time.ts';
import { assertAllowed } from '../vms/vm-rules.ts';
import { findLiveVm } from '../vms/vm-rows.ts';
import { schedulingEnabled, type ScheduleRow } from './schedule-rows.ts';

type ScheduleRestartRequest = components['schemas']['ScheduleRestartRequest'];

/** The wall-clock rule of a repeating schedule, as stored. */
export function recurrenceOf(
  row: Pick<ScheduleRow, 'kind' | 'day_of_week' | 'day_of_month' | 'time_of_day' | 'timezone'>,
): Recurrence | undefined {
  if (row.kind === 'weekly') return { kind: 'weekly', dayOfWeek: row.day_of_week!, timeOfDay: row.time_of_day!, timezone: row.timezone };
  if (row.kind === 'monthly')
    return { kind: 'monthly', dayOfMonth: row.day_of_month!, timeOfDay: row.time_of_day!, timezone: row.timezone };
  return undefined;
}

const OFFSET = /(Z|[+-]\d{2}:?\d{2})$/i;
const KIND_FIELDS = { once: ['run_at'], weekly: ['day_of_week', 'time_of_day'], monthly: ['day_of_month', 'time_of_day'] } as const;
const ALL_FIELDS = ['run_at', 'day_of_week', 'day_of_month', 'time_of_day'] as const;

/**
 * The rules of a schedule request beyond its shape (and the shape's per-kind rules again, so
 * that they hold whatever validates the request): every breach is one `errors` entry.
 */
export function checkScheduleRequest(
  request: ScheduleRestartRequest,
  now: Date,
): { recurrence?: Recurrence; runAt?: Date; timeOfDay: string | null; timezone: string } {
  const errors: FieldError[] = [];
  const required: readonly string[] = KIND_FIELDS[request.kind];
  for (const field of ALL_FIELDS) {
    const value = request[field];
    const present = value !== undefined && value !== null;
    if (required.includes(field) && !present) errors.push({ pointer: `/${field}`, detail: `is required for kind ${request.kind}` });
    if (!required.includes(field) && present)
      errors.push({ pointer: `/${field}`, detail: `must be absent or null for kind ${request.kind}` });
  }
  const timezone = request.timezone ?? 'UTC';
  if (!isKnownTimezone(timezone))
    errors.push({ pointer: '/timezone', detail: 'is not a known IANA time zone, such as Europe/Berlin or UTC' });
  let timeOfDay: string | null = null;
  if (request.time_of_day !== undefined && request.time_of_day !== null) {
    timeOfDay = normaliseTimeOfDay(request.time_of_day) ?? null;
    if (!timeOfDay) errors.push({ pointer: '/time_of_day', detail: 'must be a 24-hour wall-clock time HH:MM or HH:MM:SS, such as 03:00' });
  }
  let runAt: Date | undefined;
  if (request.kind === 'once' && request.run_at) {
    runAt = new Date(request.run_at);
    if (!OFFSET.test(request.run_at))
      errors.push({ pointer: '/run_at', detail: 'must be a date-time with its UTC offset, such as 2026-11-25T23:30:00+01:00' });
    else if (Number.isNaN(runAt.getTime())) errors.push({ pointer: '/run_at', detail: 'must be a date-time' });
    else if (runAt.getTime() <= now.getTime()) errors.push({ pointer: '/run_at', detail: 'must be in the future' });
  }
  if (errors.length > 0) throw validationFailed(errors);
  if (request.kind === 'once') return { runAt, timeOfDay: null, timezone };
  const recurrence = recurrenceOf({
    kind: request.kind,
    day_of_week: request.day_of_week ?? null,
    day_of_month: request.day_of_month ?? null,
    time_of_day: timeOfDay,
    timezone,
  });
  return { recurrence, timeOfDay, timezone };
}

/** Scheduled restarts: created with their first run computed, listed, cancelled. */
export function createScheduleService() {
  return {
    /** Refusals in the contract's order: the request's rules, the instance, scheduling_enabled, policy. */
    async create(tx: PoolClient, orgId: string, vmId: string, request: ScheduleRestartRequest, now: Date): Promise<ScheduleRow> {
      const checked = checkScheduleRequest(request, now);
      const vm = await findLiveVm(tx, orgId, vmId, true);
      if (!vm) throw vmNotFound(vmId);
      if (!(await schedulingEnabled(tx, orgId))) throw schedulingDisabled();
      assertAllowed(vm, 'reboot');
      const nextRun = checked.runAt ?? nextRunAfter(checked.recurrence!, now);
      const { rows } = await tx.query<ScheduleRow>(
        `INSERT INTO scheduled_actions (id, org_id, vm_id, kind, run_at, day_of_week, day_of_month, time_of_day, timezone, state, next_run_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'scheduled', $10) RETURNING *`,
        [
          randomUUID(),
          orgId,
          vm.id,
          request.kind,
          checked.runAt ?? null,
          request.day_of_week ?? null,
          request.day_of_month ?? null,
          checked.timeOfDay,
          checked.timezone,
          nextRun,
        ],
      );
      return rows[0]!;
    },

    async cancel(tx: PoolClient, orgId: string, scheduleId: string): Promise<{ schedule: ScheduleRow; before: ScheduleRow }> {
      const { rows } = await tx.query<ScheduleRow>('SELECT * FROM scheduled_actions WHERE org_id = $1 AND id = $2 FOR UPDATE', [
        orgId,
        scheduleId,
      ]);
      const before = rows[0];
      if (!before) throw scheduleNotFound(scheduleId);
      if (before.state !== 'scheduled') throw scheduledActionStateConflict(scheduleId, before.state);
      const { rows: updated } = await tx.query<ScheduleRow>(
        `UPDATE scheduled_actions SET state = 'cancelled', next_run_at = NULL, updated_at = now() WHERE id = $1 RETURNING *`,
        [scheduleId],
      );
      return { schedule: updated[0]!, before };
    },
  };
}
