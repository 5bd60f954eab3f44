// Shared background passes (server/core/background-passes.ts): a pass over the whole platform (a
// reconciler) runs once an interval among every process on one database, not once in each. Two
// runners stand for two processes. Their timers are fake, so an interval passes only when a test
// moves time on; the passes' claims use the database's clock, which the tests set back instead.
import { afterAll, afterEach, beforeAll, beforeEach, expect, test, vi } from 'vitest';
import { claimPassesIn, type PassClaim } from '../../../server/core/background-passes.ts';
import { BackgroundRunner, type BackgroundTask } from '../../../server/core/background.ts';
import { migrate } from '../../../server/db/migrate.ts';
import { createPool, type Pool } from '../../../server/db/pool.ts';
import { driverMigrations } from '../../../server/drivers/selection.ts';
import { createLogger } from '../../../server/logging.ts';
import { createTestDatabase } from '../../support/server.ts';

const HOUR_MS = 3_600_000;

let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase({ migrated: true }), 4);
  await migrate(pool, driverMigrations({ compute: 'simulator', objectStore: 'simulator', billing: 'simulator' }));
});
afterAll(() => pool?.end());

const runners: BackgroundRunner[] = [];
beforeEach(async () => {
  await pool.query('DELETE FROM background_passes');
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
  vi.useRealTimers();
});

/** A process's runner of one task: its passes counted, and its claims' answers kept in order. */
function processRunning(task: Omit<BackgroundTask, 'run'>) {
  const claimIn = claimPassesIn(pool);
  const claims: Array<Promise<boolean>> = [];
  const claim: PassClaim = (name, intervalMs) => {
    const claimed = claimIn(name, intervalMs);
    claims.push(claimed);
    return claimed;
  };
  const runner = new BackgroundRunner(createLogger('silent'), undefined, claim);
  runners.push(runner);
  const started = { passes: 0, claims, runner };
  runner.start([{ ...task, run: async () => void started.passes++ }]);
  return started;
}

/** Waits until the process has claimed `count` times and has run what those claims let it run. */
async function claimedTimes(started: { claims: Array<Promise<boolean>> }, count: number): Promise<boolean[]> {
  await vi.waitFor(() => expect(started.claims.length).toBe(count));
  const answers = await Promise.all(started.claims);
  await new Promise((resolve) => setImmediate(resolve));
  return answers;
}

/**
 * The runners' next interval: the last pass's start set back `minutesAgo` by the database's clock,
 * the runners' timers moved on an interval.
 */
async function nextInterval(lastPassMinutesAgo: number): Promise<void> {
  await pool.query(`UPDATE background_passes SET started_at = now() - make_interval(mins => $1)`, [lastPassMinutesAgo]);
  await vi.advanceTimersByTimeAsync(HOUR_MS);
}

test('a shared pass another process ran this interval is skipped; the next interval, one of the two runs it', async () => {
  const first = processRunning({ name: 'reconciler', intervalMs: HOUR_MS, shared: true });
  expect(await claimedTimes(first, 1)).toEqual([true]);
  expect(first.passes).toBe(1);

  const second = processRunning({ name: 'reconciler', intervalMs: HOUR_MS, shared: true });
  expect(await claimedTimes(second, 1)).toEqual([false]);
  expect(second.passes, 'the second process ran the pass the first had run this interval').toBe(0);

  // An interval later, both wake and claim.
  await nextInterval(61);
  const firstAnswers = await claimedTimes(first, 2);
  const secondAnswers = await claimedTimes(second, 2);
  expect([firstAnswers[1], secondAnswers[1]].filter(Boolean), 'one claim of the two won this interval').toHaveLength(1);
  expect(first.passes + second.passes).toBe(2);
});

test('the process that ran the last pass is not the only one that may: when it is gone, another runs the next', async () => {
  const gone = processRunning({ name: 'reconciler', intervalMs: HOUR_MS, shared: true });
  await claimedTimes(gone, 1);
  const staying = processRunning({ name: 'reconciler', intervalMs: HOUR_MS, shared: true });
  await claimedTimes(staying, 1);
  await gone.runner.stop();
  expect(staying.passes).toBe(0);

  await nextInterval(61);
  expect(await claimedTimes(staying, 2)).toEqual([false, true]);
  expect(staying.passes).toBe(1);
});

test('a pass started most of an interval ago, by a timer a little early, is not skipped by the process that ran it', async () => {
  const only = processRunning({ name: 'reconciler', intervalMs: HOUR_MS, shared: true });
  await claimedTimes(only, 1);
  await nextInterval(57);
  expect(await claimedTimes(only, 2)).toEqual([true, true]);
  expect(only.passes).toBe(2);
});

test('tasks each claim their own passes, and a task that is not shared runs in every process', async () => {
  const reconciling = processRunning({ name: 'reconciler', intervalMs: HOUR_MS, shared: true });
  await claimedTimes(reconciling, 1);
  const purging = processRunning({ name: 'purge', intervalMs: HOUR_MS, shared: true });
  expect(await claimedTimes(purging, 1), "the reconciler's pass held the purge's back").toEqual([true]);

  const counted = [processRunning({ name: 'metering', intervalMs: HOUR_MS }), processRunning({ name: 'metering', intervalMs: HOUR_MS })];
  await vi.waitFor(() => expect(counted.map((started) => started.passes)).toEqual([1, 1]));
  expect(
    counted.flatMap((started) => started.claims),
    'an unshared task claimed a pass',
  ).toEqual([]);
});
