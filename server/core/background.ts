import { isDatabaseUnavailable } from '../db/unavailable.ts';
import type { Logger } from '../logging.ts';
import type { Metrics } from '../metrics.ts';
import type { PassClaim } from './background-passes.ts';

/** A loop the platform runs in the background (a reconciler, a scheduler, the billing run). */
export interface BackgroundTask {
  name: string;
  intervalMs: number;
  /**
   * A pass over the whole platform rather than this process's own work (a reconciler): one pass
   * an interval among every process on the database, run by the first to claim it.
   */
  shared?: boolean;
  run(signal: AbortSignal): Promise<void>;
}

/**
 * Runs background tasks on their intervals until stopped. A run that fails is logged and tried
 * again at the next interval (so a database outage ends by itself); runs of one task never
 * overlap, and no failure escapes the loop.
 */
export class BackgroundRunner {
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];

  private readonly log: Logger;
  private readonly metrics?: Metrics;
  private readonly claimPass?: PassClaim;

  /** Without `claimPass`, a shared task runs at every interval, as any other. */
  constructor(log: Logger, metrics?: Metrics, claimPass?: PassClaim) {
    this.log = log;
    this.metrics = metrics;
    this.claimPass = claimPass;
  }

  start(tasks: BackgroundTask[]): void {
    for (const task of tasks) this.loops.push(this.loop(task));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async loop(task: BackgroundTask): Promise<void> {
    const { signal } = this.abort;
    let unavailableRuns = 0;
    while (!signal.aborted) {
      const started = performance.now();
      try {
        // A shared pass another process has run this interval is skipped.
        if (!task.shared || !this.claimPass || (await this.claimPass(task.name, task.intervalMs))) {
          await task.run(signal);
          this.metrics?.backgroundRan(task.name, 'succeeded', (performance.now() - started) / 1000);
        }
        if (unavailableRuns > 0)
          this.log.info({ task: task.name, runs: unavailableRuns }, 'background task runs again: the database is back');
        unavailableRuns = 0;
      } catch (error) {
        if (!signal.aborted) this.metrics?.backgroundRan(task.name, 'failed', (performance.now() - started) / 1000);
        if (signal.aborted) {
          // Stopping: whatever the run was doing was cut short on purpose.
        } else if (isDatabaseUnavailable(error)) {
          // An outage fails every run until it ends: said once, not at every interval.
          if (unavailableRuns++ === 0)
            this.log.warn(
              { task: task.name, reason: (error as Error).message },
              'background task cannot reach the database; trying at every interval',
            );
        } else {
          this.log.error({ err: error, task: task.name }, 'background task failed');
        }
      }
      // Stopped during the run: an aborted signal fires no more 'abort' events, so waiting for one
      // would hold the stop for a whole interval (a metering run under way at a stop held it
      // for minutes).
      if (signal.aborted) break;
      await this.waitForNextInterval(task);
    }
  }

  private async waitForNextInterval(task: BackgroundTask): Promise<void> {
    const { signal } = this.abort;
    await new Promise<void>((resolve) => {
      // The abort listener goes when the wait ends, or every run would leave one behind.
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, task.intervalMs);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
