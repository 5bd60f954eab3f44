import { recordAudit } from '../../../core/audit.ts';
import { recordEvents } from '../../../core/events.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import { SYSTEM_ACTOR } from '../../../core/principal.ts';
import { withTransaction, type Pool, type PoolClient } from '../../../db/pool.ts';
import { DomainError } from '../../../core/errors.ts';
import { allowedActions, changeInFlight } from '../vms/vm-policy.ts';
import { nextRunAfter } from './schedule-time.ts';
import { toScheduledActionOut, type ScheduleRow } from './schedule-rows.ts';
import { recurrenceOf } from './schedule-service.ts';
import { rebootVm, type VmServiceDependencies } from '../vms/vm-service.ts';
import { toVmOut, type VmRow } from '../vms/vm-rows.ts';

/** A run reached later than this after it came due is skipped (`missed`), not run late. */
export const GRACE_PERIOD_MS = 15 * 60_000;
/** Schedules claimed per transaction. */
const BATCH = 25;

type Outcome = Pick<ScheduleRow, 'last_outcome' | 'last_outcome_detail' | 'last_operation_id'>;

/**
 * The scheduler: runs the schedules that have come due by their organization's clock (the
 * platform's, or a test clock moved forward). Due schedules are claimed with `FOR UPDATE SKIP
 * LOCKED` inside the transaction that records their run, so with several processes each due run
 * is handled by exactly one of them, once.
 */
export function createScheduler({ pool, orgClock, vms }: { pool: Pool; orgClock: OrganizationClock; vms: VmServiceDependencies }) {
  async function runOne(tx: PoolClient, schedule: ScheduleRow, now: Date): Promise<void> {
    const due = schedule.next_run_at!;
    const outcome = now.getTime() - due.getTime() > GRACE_PERIOD_MS ? missed(due, now) : await restart(tx, schedule);
    const recurrence = recurrenceOf(schedule);
    // The next run after both the due instant and now: after an outage, runs in the past are not
    // replayed one by one.
    const next = recurrence ? nextRunAfter(recurrence, new Date(Math.max(due.getTime(), now.getTime()))) : null;
    const { rows } = await tx.query<ScheduleRow>(
      `UPDATE scheduled_actions SET last_run_at = $2, last_outcome = $3, last_outcome_detail = $4, last_operation_id = $5,
         state = $6, next_run_at = $7, updated_at = now()
       WHERE id = $1 RETURNING *`,
      [
        schedule.id,
        due,
        outcome.last_outcome,
        outcome.last_outcome_detail,
        outcome.last_operation_id,
        next ? 'scheduled' : 'completed',
        next,
      ],
    );
    // A missed restart is announced with the schedule as it now stands, in the same transaction.
    if (outcome.last_outcome === 'missed') {
      await recordEvents(tx, [
        {
          orgId: schedule.org_id,
          type: 'schedule.restart_missed',
          resourceId: schedule.id,
          data: { scheduled_action: toScheduledActionOut(rows[0]!) },
        },
      ]);
    }
  }

  function missed(due: Date, now: Date): Outcome {
    const minutes = Math.floor((now.getTime() - due.getTime()) / 60_000);
    return {
      last_outcome: 'missed',
      last_outcome_detail: `The platform reached this run ${minutes} minutes after it was due, beyond the 15-minute grace period, so the restart was skipped rather than run late.`,
      last_operation_id: null,
    };
  }

  const refused = (sentence: string): Outcome => ({ last_outcome: 'refused', last_outcome_detail: sentence, last_operation_id: null });

  /** Queues the restart as rebootVm would, or says in a sentence why the instance cannot restart now. */
  async function restart(tx: PoolClient, schedule: ScheduleRow): Promise<Outcome> {
    const { rows } = await tx.query<VmRow>('SELECT * FROM vms WHERE id = $1 AND org_id = $2 FOR UPDATE', [schedule.vm_id, schedule.org_id]);
    const vm = rows[0];
    if (!vm || vm.deleted_at) return refused('The instance was deleted, so nothing was restarted.');
    const allowed = allowedActions(vm);
    if (!allowed.includes('reboot'))
      return refused(`reboot is no longer in the instance's allowed_actions (${allowed.join(', ')}), so nothing was restarted.`);
    if (changeInFlight(vm)) return refused(`The instance was ${vm.state} with another change in flight, so nothing was restarted.`);
    if (vm.state !== 'running') return refused(`The instance was ${vm.state}, not running, so nothing was restarted.`);
    try {
      await tx.query('SAVEPOINT scheduled_restart');
      const change = await rebootVm(vms, tx, schedule.org_id, vm.id);
      await recordAudit(tx, {
        orgId: schedule.org_id,
        action: 'vm.reboot',
        resourceType: 'vm',
        resourceId: vm.id,
        before: toVmOut(change.before),
        after: toVmOut(change.vm),
        operationId: change.operation.id,
        // The platform acting on its own; the schedule names this operation in last_operation_id.
        actor: SYSTEM_ACTOR,
        result: 'succeeded',
      });
      return { last_outcome: 'queued', last_outcome_detail: null, last_operation_id: change.operation.id };
    } catch (error) {
      // The rules of rebootVm refused it after all: recorded as refused, with its reason.
      if (!(error instanceof DomainError)) throw error;
      await tx.query('ROLLBACK TO SAVEPOINT scheduled_restart');
      return refused(`The restart was refused: ${error.detail}`.slice(0, 300));
    }
  }

  return {
    /** Handles every schedule due by now, a batch per transaction. */
    async runDue(signal?: AbortSignal): Promise<number> {
      let handled = 0;
      for (;;) {
        const count = await withTransaction(pool, async (tx) => {
          const offsets = await orgClock.offsets(tx);
          const now = orgClock.base.now();
          // Due by the organization's own time: now plus its test clock's offset (none: zero).
          const { rows } = await tx.query<ScheduleRow>(
            `SELECT s.* FROM scheduled_actions s
             WHERE s.state = 'scheduled'
               AND s.next_run_at <= $1::timestamptz + make_interval(secs => COALESCE(($3::jsonb ->> s.org_id::text)::numeric, 0) / 1000)
             ORDER BY s.next_run_at LIMIT $2 FOR UPDATE OF s SKIP LOCKED`,
            [now, BATCH, JSON.stringify(Object.fromEntries(offsets))],
          );
          // Their instances locked first, by id (as every transaction that locks several does; see
          // engine/executor.ts lockingRows), not one by one in the order the runs came due.
          if (rows.length > 1) {
            await tx.query('SELECT 1 FROM vms WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', [rows.map((row) => row.vm_id)]);
          }
          for (const schedule of rows) await runOne(tx, schedule, orgClock.nowWith(offsets, schedule.org_id));
          return rows.length;
        });
        handled += count;
        if (count < BATCH || signal?.aborted) return handled;
      }
    },
  };
}
