// The background loops stop when the server stops: at once between runs, and as soon as a run
// under way finishes, never a whole interval later (a server told to stop during a long run,
// such as the first metering at start-up, stayed up for that task's interval).
import { expect, test } from 'vitest';
import { BackgroundRunner } from '../../server/core/background.ts';
import { createLogger } from '../../server/logging.ts';

const HOUR_MS = 3_600_000;

test('a stop during a run ends the loop when that run finishes', async () => {
  const runner = new BackgroundRunner(createLogger('silent'));
  let runs = 0;
  let running!: () => void;
  const started = new Promise<void>((resolve) => (running = resolve));
  runner.start([
    {
      name: 'slow',
      intervalMs: HOUR_MS,
      run: async () => {
        runs++;
        running();
        await new Promise((resolve) => setTimeout(resolve, 200));
      },
    },
  ]);
  await started;
  const stopping = performance.now();
  await runner.stop();
  expect(performance.now() - stopping).toBeLessThan(5_000);
  expect(runs).toBe(1);
});

test('a stop between runs ends the loop at once', async () => {
  const runner = new BackgroundRunner(createLogger('silent'));
  let runs = 0;
  runner.start([{ name: 'quick', intervalMs: HOUR_MS, run: async () => void runs++ }]);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const stopping = performance.now();
  await runner.stop();
  expect(performance.now() - stopping).toBeLessThan(5_000);
  expect(runs).toBe(1);
});
