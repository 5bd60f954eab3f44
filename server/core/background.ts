import type { BackgroundTask } from '../areas/area.ts';
import type { Logger } from '../logging.ts';

/**
 * Runs background tasks on their intervals until stopped. A run that fails is logged and tried
 * again at the next interval; runs of one task never overlap.
 */
export class BackgroundRunner {
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];

  constructor(private readonly log: Logger) {}

  start(tasks: BackgroundTask[]): void {
    for (const task of tasks) this.loops.push(this.loop(task));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async loop(task: BackgroundTask): Promise<void> {
    const { signal } = this.abort;
    while (!signal.aborted) {
      try {
        await task.run(signal);
      } catch (error) {
        if (!signal.aborted) this.log.error({ err: error, task: task.name }, 'background task failed');
      }
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
}
