// The background loops stop when the server stops: at once between runs, and as soon as a run
// under way finishes, never a whole interval later (a server told to stop during a long run,
// such as the first metering at start-up, stayed up for that task's interval). The runner's
// timers are fake here: an interval can only pass when a test moves time on, and none does, so a
// stop that waited for one would never end.
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { BackgroundRunner } from '../../../server/core/background.ts';
import { createLogger } from '../../../server/logging.ts';

const HOUR_MS = 3_600_000;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Whether `promise` has settled once what is already on its way has run (real time, no timer of the runner). */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

test('a stop during a run ends the loop when that run finishes', async () => {
  const runner = new BackgroundRunner(createLogger('silent'));
  let runs = 0;
  let running!: () => void;
  let finish!: () => void;
  const started = new Promise<void>((resolve) => (running = resolve));
  const finished = new Promise<void>((resolve) => (finish = resolve));
  runner.start([
    {
      name: 'slow',
      intervalMs: HOUR_MS,
      run: async () => {
        runs++;
        running();
        await finished;
      },
    },
  ]);
  await started;
  const stopped = runner.stop();
  expect(await settledNow(stopped), 'stopped before the run under way finished').toBe(false);
  finish();
  expect(await settledNow(stopped), 'stopped once the run finished').toBe(true);
  expect(runs).toBe(1);
});

test('a stop between runs ends the loop at once', async () => {
  const runner = new BackgroundRunner(createLogger('silent'));
  let runs = 0;
  let ran!: () => void;
  const firstRun = new Promise<void>((resolve) => (ran = resolve));
  runner.start([
    {
      name: 'quick',
      intervalMs: HOUR_MS,
      run: async () => {
        runs++;
        ran();
      },
    },
  ]);
  await firstRun;
  // The loop is now waiting for its next interval.
  await new Promise((resolve) => setImmediate(resolve));
  expect(await settledNow(runner.stop()), 'stopped without waiting for the interval').toBe(true);
  expect(runs).toBe(1);
});
