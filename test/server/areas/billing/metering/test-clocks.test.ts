// Test clocks (TEST_CLOCKS=true): an operator moves one organization's time forward, and what
// reads that organization's time follows it without waiting: a scheduled restart comes due,
// month-to-date moves to the new month. Other organizations keep the platform's time.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runAdminCommand } from '../../../../../server/admin/commands.ts';
import { loadConfig } from '../../../../../server/config.ts';
import { parseDuration } from '../../../../../server/core/test-clocks.ts';
import { createLogger } from '../../../../../server/logging.ts';
import { eventually } from '../../../../support/eventually.ts';
import { startTestServer, TEST_ENV, type TestOrg, type TestServer } from '../../../../support/server.ts';
import { runningVm } from '../../compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ TEST_CLOCKS: 'true' });
});
afterAll(() => server?.close());

const HOUR = 3_600_000;

function clockCommand(args: string[], options: Record<string, string>, testClocks = true) {
  const config = loadConfig({ ...TEST_ENV, TEST_CLOCKS: String(testClocks), SIM_LATENCY_MS: '1', DATABASE_URL: server.databaseUrl });
  return runAdminCommand(server.pool, 'clock', options, 'operator-alice', { config, log: createLogger('silent'), args });
}

async function scheduleInTwoHours(org: TestOrg, vmId: string): Promise<{ id: string; next_run_at: string }> {
  const now = new Date((await clockCommand(['show'], { org: org.orgId })).now as string);
  const runAt = new Date(now.getTime() + 2 * HOUR).toISOString().replace(/\.\d+Z$/, 'Z');
  const created = await org.call('POST', `/compute/vms/${vmId}/scheduled-actions`, { body: { kind: 'once', run_at: runAt } });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

describe('an organization clock moved forward', () => {
  test('fires a scheduled restart that comes due, for that organization only', async () => {
    const other = await server.createOrg('Still Waiting');
    const [vm, otherVm] = await Promise.all([runningVm(server, server.org), runningVm(server, other)]);
    const schedule = await scheduleInTwoHours(server.org, vm.id);
    const otherSchedule = await scheduleInTwoHours(other, otherVm.id);

    await clockCommand(['advance'], { org: server.org.orgId, by: '2h' });
    const ran = await eventually(async () => {
      const { items } = (await server.org.call('GET', `/compute/vms/${vm.id}/scheduled-actions`)).body;
      const found = items.find((item: { id: string }) => item.id === schedule.id);
      return found?.last_outcome ? found : undefined;
    }, 'the scheduler to run the restart');
    expect(ran).toMatchObject({ state: 'completed', last_outcome: 'queued', last_run_at: schedule.next_run_at });
    const operation = await server.waitForOperation(server.org, ran.last_operation_id);
    expect(operation).toMatchObject({ type: 'vm.reboot', state: 'succeeded' });

    // The other organization's clock did not move: its restart is still ahead.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const { items } = (await other.call('GET', `/compute/vms/${otherVm.id}/scheduled-actions`)).body;
    expect(items.find((item: { id: string }) => item.id === otherSchedule.id)).toMatchObject({ state: 'scheduled', last_outcome: null });
  });

  test('month-to-date and the period end follow the moved clock; the move is audited as the operator', async () => {
    const org = await server.createOrg('Time Traveller');
    const before = (await org.call('GET', '/billing')).body;
    const moved = await clockCommand(['advance'], { org: org.orgId, by: '40d' });
    expect(moved.offset_ms).toBe(40 * 24 * HOUR);
    const after = (await org.call('GET', '/billing')).body;
    expect(Date.parse(after.current_period_end)).toBeGreaterThan(Date.parse(before.current_period_end));
    const { items } = (await org.call('GET', '/audit-events?action=org.advance_clock')).body;
    expect(items[0]).toMatchObject({
      actor_sub: 'operator-alice',
      actor_realm: 'operator',
      before: { offset_ms: 0 },
      after: { offset_ms: 40 * 24 * HOUR },
    });
  });

  test('only moves forward, and only with test clocks on', async () => {
    await expect(clockCommand(['advance'], { org: server.org.orgId, by: '-5m' })).rejects.toThrow(/--by must be a duration/);
    await expect(clockCommand(['advance'], { org: server.org.orgId, by: '0s' })).rejects.toThrow(/--by must be a duration/);
    await expect(clockCommand(['advance'], { org: server.org.orgId, by: '1h' }, false)).rejects.toThrow(/test clocks are off/);
    expect(parseDuration('32d')).toBe(32 * 24 * HOUR);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('soon')).toBeUndefined();
  });
});
