// Scheduled restarts on the real server. The platform's clock is a test clock: schedules come due
// when the test moves it, and the background scheduler (every 200 ms here) runs them.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { setProtectionByOperator } from '../../../../../server/areas/compute/vms/vm-protection.ts';
import { createScheduler } from '../../../../../server/areas/compute/schedules/scheduler.ts';
import { loadCatalogue } from '../../../../../server/areas/compute/catalogue/catalogue.ts';
import { withTransaction } from '../../../../../server/db/pool.ts';
import { createOrganizationClock } from '../../../../../server/core/test-clocks.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';
import { act, eventually, runningVm, singleCopyRequest, TestClock, type VmOut } from '../fixtures.ts';

let server: TestServer;
let org: TestOrg;
const clock = new TestClock();
beforeAll(async () => {
  server = await startTestServer({}, { clock });
  org = server.org;
});
afterAll(() => server?.close());

const schedule = (vmId: string, body: Record<string, unknown>) => org.call('POST', `/compute/vms/${vmId}/scheduled-actions`, { body });
const listOf = async (vmId: string) => (await org.call('GET', `/compute/vms/${vmId}/scheduled-actions`)).body;

/** Waits until the scheduler has recorded a run of the schedule due at `due`. */
async function runAt(vmId: string, scheduleId: string, due: string): Promise<any> {
  return eventually(async () => {
    const found = (await listOf(vmId)).items.find((item: { id: string }) => item.id === scheduleId);
    return found?.last_run_at === due ? found : undefined;
  });
}

describe('scheduleVmRestart', () => {
  test('a weekly schedule is created with its first run computed in its time zone', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const created = await schedule(vm.id, { kind: 'weekly', day_of_week: 6, time_of_day: '03:00:00', timezone: 'Europe/Berlin' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      vm_id: vm.id,
      action: 'reboot',
      kind: 'weekly',
      run_at: null,
      day_of_week: 6,
      day_of_month: null,
      time_of_day: '03:00',
      timezone: 'Europe/Berlin',
      state: 'scheduled',
      next_run_at: '2026-11-22T02:00:00.000Z',
      last_run_at: null,
      last_outcome: null,
      last_outcome_detail: null,
      last_operation_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const monthly = await schedule(vm.id, { kind: 'monthly', day_of_month: 1, time_of_day: '04:30:15' });
    expect(monthly.body).toMatchObject({ timezone: 'UTC', time_of_day: '04:30:15', next_run_at: '2026-12-01T04:30:15.000Z' });
    const once = await schedule(vm.id, { kind: 'once', run_at: '2026-11-25T23:30:00+01:00', timezone: 'Europe/Berlin' });
    expect(once.body).toMatchObject({
      kind: 'once',
      run_at: '2026-11-25T22:30:00.000Z',
      next_run_at: '2026-11-25T22:30:00.000Z',
      time_of_day: null,
    });
  });

  test('breaking a rule is 400 with a pointer to the field', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: 'once', run_at: '2026-11-19T10:00:00Z' }, '/run_at'],
      [{ kind: 'once', run_at: '2026-11-25T23:30:00' }, '/run_at'],
      [{ kind: 'once' }, '/run_at'],
      [{ kind: 'weekly', day_of_week: 6, time_of_day: '03:00', run_at: '2026-11-25T23:30:00Z' }, '/run_at'],
      [{ kind: 'weekly', day_of_week: 6 }, '/time_of_day'],
      [{ kind: 'weekly', day_of_week: 7, time_of_day: '03:00' }, '/day_of_week'],
      [{ kind: 'monthly', day_of_month: 29, time_of_day: '03:00' }, '/day_of_month'],
      [{ kind: 'monthly', day_of_month: 1, time_of_day: '3:00' }, '/time_of_day'],
      [{ kind: 'monthly', day_of_month: 1, time_of_day: '24:00' }, '/time_of_day'],
      [{ kind: 'monthly', day_of_month: 1, time_of_day: '03:00', timezone: 'Mars/Olympus_Mons' }, '/timezone'],
      [{ kind: 'daily', time_of_day: '03:00' }, '/kind'],
    ];
    for (const [body, pointer] of cases) {
      const response = await schedule(vm.id, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(
        response.body.errors.map((error: { pointer: string }) => error.pointer),
        JSON.stringify(body),
      ).toContain(pointer);
    }
    const past = await schedule(vm.id, { kind: 'once', run_at: '2026-11-19T10:00:00Z' });
    expect(past.body.errors).toEqual([{ pointer: '/run_at', detail: 'must be in the future' }]);
    expect(
      (await schedule('00000000-0000-4000-8000-000000000000', { kind: 'monthly', day_of_month: 1, time_of_day: '03:00' })).status,
    ).toBe(404);
  });

  test('scheduling disabled: creation is 409; existing schedules are listed, cancelled and still run', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const existing = (await schedule(vm.id, { kind: 'once', run_at: '2026-11-20T11:00:00Z' })).body;
    const other = (await schedule(vm.id, { kind: 'monthly', day_of_month: 5, time_of_day: '03:00' })).body;
    await server.pool.query('UPDATE orgs SET scheduling_enabled = false WHERE id = $1', [org.orgId]);
    try {
      const refused = await schedule(vm.id, { kind: 'monthly', day_of_month: 1, time_of_day: '03:00' });
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('scheduling_disabled');
      const list = await listOf(vm.id);
      expect(list.scheduling_enabled).toBe(false);
      expect(list.items.map((item: { id: string }) => item.id)).toEqual([existing.id, other.id]);
      expect((await org.call('DELETE', `/compute/scheduled-actions/${other.id}`)).status).toBe(200);
      clock.set('2026-11-20T11:00:01Z');
      expect((await runAt(vm.id, existing.id, '2026-11-20T11:00:00.000Z')).last_outcome).toBe('queued');
    } finally {
      await server.pool.query('UPDATE orgs SET scheduling_enabled = true WHERE id = $1', [org.orgId]);
    }
    expect((await listOf(vm.id)).scheduling_enabled).toBe(true);
  });

  test('an instance that does not allow reboot cannot be scheduled (409 vm_action_not_allowed)', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org, {}, singleCopyRequest);
    await withTransaction(server.pool, (tx) =>
      setProtectionByOperator(tx, {
        orgId: org.orgId,
        vmId: vm.id,
        protected: true,
        actor: { subject: 'ops', realm: 'operator', tokenId: null },
      }),
    );
    const refused = await schedule(vm.id, { kind: 'weekly', day_of_week: 6, time_of_day: '03:00' });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('vm_action_not_allowed');
  });
});

describe('runs', () => {
  test('a due run queues a vm.reboot operation and records it', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const created = (await schedule(vm.id, { kind: 'once', run_at: '2026-11-20T10:05:00Z' })).body;
    clock.set('2026-11-20T10:05:01Z');
    const run = await runAt(vm.id, created.id, '2026-11-20T10:05:00.000Z');
    expect(run).toMatchObject({
      state: 'completed',
      next_run_at: null,
      last_outcome: 'queued',
      last_outcome_detail: null,
      last_operation_id: expect.any(String),
    });
    const operation = await server.waitForOperation(org, run.last_operation_id);
    expect(operation).toMatchObject({ type: 'vm.reboot', resource_id: vm.id, state: 'succeeded' });
    const { rows } = await server.pool.query(`SELECT action, actor_realm, result FROM audit_events WHERE operation_id = $1`, [
      run.last_operation_id,
    ]);
    expect(rows).toEqual([{ action: 'vm.reboot', actor_realm: 'system', result: 'succeeded' }]);
    // A completed schedule cannot be cancelled.
    const cancel = await org.call('DELETE', `/compute/scheduled-actions/${created.id}`);
    expect(cancel.status).toBe(409);
    expect(cancel.body).toMatchObject({
      code: 'scheduled_action_state_conflict',
      detail: `Scheduled restart ${created.id} is completed; only a scheduled one can be cancelled.`,
    });
  });

  test('spring forward: 02:30 Berlin runs at 03:00 CEST, then at 02:30 the week after', async () => {
    clock.set('2026-03-25T12:00:00Z');
    const vm = await runningVm(server, org);
    const created = (await schedule(vm.id, { kind: 'weekly', day_of_week: 6, time_of_day: '02:30', timezone: 'Europe/Berlin' })).body;
    expect(created.next_run_at).toBe('2026-03-29T01:00:00.000Z');
    clock.set('2026-03-29T01:00:02Z');
    const run = await runAt(vm.id, created.id, '2026-03-29T01:00:00.000Z');
    expect(run).toMatchObject({ state: 'scheduled', last_outcome: 'queued', next_run_at: '2026-04-05T00:30:00.000Z' });
  });

  test('fall back: 02:30 Berlin runs once, at the first occurrence', async () => {
    clock.set('2026-10-21T12:00:00Z');
    const vm = await runningVm(server, org);
    const created = (await schedule(vm.id, { kind: 'weekly', day_of_week: 6, time_of_day: '02:30', timezone: 'Europe/Berlin' })).body;
    expect(created.next_run_at).toBe('2026-10-25T00:30:00.000Z');
    clock.set('2026-10-25T00:30:02Z');
    const run = await runAt(vm.id, created.id, '2026-10-25T00:30:00.000Z');
    expect(run).toMatchObject({ last_outcome: 'queued', next_run_at: '2026-11-01T01:30:00.000Z' });
    await server.waitForOperation(org, run.last_operation_id);
    // The second 02:30 (01:30 UTC) passes without a run.
    clock.set('2026-10-25T01:30:02Z');
    await new Promise((resolve) => setTimeout(resolve, 600));
    const after = (await listOf(vm.id)).items.find((item: { id: string }) => item.id === created.id);
    expect(after).toMatchObject({ last_run_at: '2026-10-25T00:30:00.000Z', last_operation_id: run.last_operation_id });
    const { rows } = await server.pool.query(`SELECT count(*)::int AS n FROM operations WHERE resource_id = $1 AND type = 'vm.reboot'`, [
      vm.id,
    ]);
    expect(rows[0].n).toBe(1);
  });

  test('reached more than 15 minutes late: missed, not run late', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const once = (await schedule(vm.id, { kind: 'once', run_at: '2026-11-20T10:10:00Z' })).body;
    const weekly = (await schedule(vm.id, { kind: 'weekly', day_of_week: 4, time_of_day: '10:10' })).body;
    // An outage: the platform comes back 20 minutes after the runs were due.
    clock.set('2026-11-20T10:30:00Z');
    const missedOnce = await runAt(vm.id, once.id, '2026-11-20T10:10:00.000Z');
    expect(missedOnce).toMatchObject({
      state: 'completed',
      next_run_at: null,
      last_outcome: 'missed',
      last_operation_id: null,
      last_outcome_detail:
        'The platform reached this run 20 minutes after it was due, beyond the 15-minute grace period, so the restart was skipped rather than run late.',
    });
    const missedWeekly = await runAt(vm.id, weekly.id, '2026-11-20T10:10:00.000Z');
    expect(missedWeekly).toMatchObject({ state: 'scheduled', last_outcome: 'missed', next_run_at: '2026-11-27T10:10:00.000Z' });
    expect((await org.call('GET', `/compute/vms/${vm.id}`)).body.state).toBe('running');
    // Each miss is announced, with the schedule as the miss left it.
    const announced = (await org.call('GET', '/events?type=schedule.restart_missed&limit=200')).body.items as any[];
    for (const missed of [missedOnce, missedWeekly]) {
      expect(announced.filter((event) => event.resource_id === missed.id).map((event) => event.data)).toEqual([
        { scheduled_action: missed },
      ]);
    }
  });

  test('an instance that cannot reboot then: refused, with a sentence why', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const stopped = await runningVm(server, org);
    await act(server, org, 'POST', `/compute/vms/${stopped.id}/stop`);
    const single = await runningVm(server, org, {}, singleCopyRequest);
    const deleted = await runningVm(server, org);
    const onStopped = (await schedule(stopped.id, { kind: 'weekly', day_of_week: 4, time_of_day: '10:10' })).body;
    const onSingle = (await schedule(single.id, { kind: 'once', run_at: '2026-11-20T10:10:00Z' })).body;
    const onDeleted = (await schedule(deleted.id, { kind: 'once', run_at: '2026-11-20T10:10:00Z' })).body;
    await withTransaction(server.pool, (tx) =>
      setProtectionByOperator(tx, {
        orgId: org.orgId,
        vmId: single.id,
        protected: true,
        actor: { subject: 'ops', realm: 'operator', tokenId: null },
      }),
    );
    await act(server, org, 'DELETE', `/compute/vms/${deleted.id}`);

    clock.set('2026-11-20T10:10:01Z');
    expect(await runAt(stopped.id, onStopped.id, '2026-11-20T10:10:00.000Z')).toMatchObject({
      state: 'scheduled',
      last_outcome: 'refused',
      last_outcome_detail: 'The instance was stopped, not running, so nothing was restarted.',
      last_operation_id: null,
      next_run_at: '2026-11-27T10:10:00.000Z',
    });
    expect(await runAt(single.id, onSingle.id, '2026-11-20T10:10:00.000Z')).toMatchObject({
      state: 'completed',
      last_outcome: 'refused',
      last_outcome_detail: "reboot is no longer in the instance's allowed_actions (start, console), so nothing was restarted.",
    });
    // Schedules outlive their instance: still listed, and their runs refused.
    expect(await runAt(deleted.id, onDeleted.id, '2026-11-20T10:10:00.000Z')).toMatchObject({
      last_outcome: 'refused',
      last_outcome_detail: 'The instance was deleted, so nothing was restarted.',
    });
  });
});

describe('listing and cancelling', () => {
  test('every state, oldest first, in pages; cancelled schedules stay listed; after deletion too', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const ids: string[] = [];
    for (const day of [1, 2, 3]) ids.push((await schedule(vm.id, { kind: 'monthly', day_of_month: day, time_of_day: '03:00' })).body.id);
    const cancelled = await org.call('DELETE', `/compute/scheduled-actions/${ids[1]}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: ids[1], state: 'cancelled', next_run_at: null });
    const again = await org.call('DELETE', `/compute/scheduled-actions/${ids[1]}`);
    expect(again.body).toMatchObject({
      code: 'scheduled_action_state_conflict',
      detail: `Scheduled restart ${ids[1]} is already cancelled.`,
    });

    const first = await org.call('GET', `/compute/vms/${vm.id}/scheduled-actions?limit=2`);
    expect(first.body.items.map((item: { id: string }) => item.id)).toEqual(ids.slice(0, 2));
    expect(first.body.scheduling_enabled).toBe(true);
    const second = await org.call('GET', `/compute/vms/${vm.id}/scheduled-actions?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.items.map((item: { id: string }) => item.id)).toEqual(ids.slice(2));

    await act(server, org, 'DELETE', `/compute/vms/${vm.id}`);
    expect((await listOf(vm.id)).items.map((item: { id: string; state: string }) => [item.id, item.state])).toEqual([
      [ids[0], 'scheduled'],
      [ids[1], 'cancelled'],
      [ids[2], 'scheduled'],
    ]);
    // Cancelling works after the instance was deleted.
    expect((await org.call('DELETE', `/compute/scheduled-actions/${ids[0]}`)).status).toBe(200);
  });

  test('404: an instance the organization never had, a schedule of another organization', async () => {
    expect((await org.call('GET', '/compute/vms/00000000-0000-4000-8000-000000000000/scheduled-actions')).status).toBe(404);
    clock.set('2026-11-20T10:00:00Z');
    const vm = await runningVm(server, org);
    const created = (await schedule(vm.id, { kind: 'monthly', day_of_month: 1, time_of_day: '03:00' })).body;
    const other = await server.createOrg();
    expect((await other.call('DELETE', `/compute/scheduled-actions/${created.id}`)).status).toBe(404);
    expect((await other.call('GET', `/compute/vms/${vm.id}/scheduled-actions`)).status).toBe(404);
    expect((await org.call('DELETE', '/compute/scheduled-actions/00000000-0000-4000-8000-000000000000')).body.code).toBe('not_found');
  });
});

describe('several schedulers at once', () => {
  test('each due run is handled by exactly one of them', async () => {
    clock.set('2026-11-20T10:00:00Z');
    const vms: VmOut[] = await Promise.all([1, 2, 3, 4, 5, 6].map(() => runningVm(server, org)));
    for (const vm of vms) await schedule(vm.id, { kind: 'once', run_at: '2026-11-20T10:20:00Z' });
    const catalogue = loadCatalogue();
    const service = { catalogue, budget: { assertCanCreateBillable: async () => {} }, maxAttempts: 5 };
    const schedulers = [1, 2, 3].map(() =>
      createScheduler({ pool: server.pool, orgClock: createOrganizationClock(clock, false), vms: service }),
    );
    clock.set('2026-11-20T10:20:01Z');
    // Three more "processes" race the server's own scheduler.
    await Promise.all(schedulers.map((scheduler) => scheduler.runDue()));
    for (const vm of vms) {
      const [run] = (await listOf(vm.id)).items;
      expect(run.last_outcome).toBe('queued');
      const { rows } = await server.pool.query(`SELECT count(*)::int AS n FROM operations WHERE resource_id = $1 AND type = 'vm.reboot'`, [
        vm.id,
      ]);
      expect(rows[0].n).toBe(1);
    }
  });
});
