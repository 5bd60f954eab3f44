import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import type { Logger } from './logging.ts';

/**
 * Gives back the memory a burst of work left behind, once the process is quiet.
 *
 * V8 grows its heap under load and frees it only in a later collection, which only allocation
 * starts: Node runs no collection while idle. A server that handled a burst kept its garbage for
 * as long as no new work came. Measured after 10 s of GET requests at 32 connections: on Node 24
 * the server stayed at 400 MiB resident for the 40 s watched (heap 310 MiB, 30 of them live);
 * with this, it went from 356 to 141 MiB within five seconds of the burst (Node 20: 224 to 109).
 *
 * Every `checkEveryMs`, once the event loop has been busy less than `quietBelow` of the time for
 * `quietForMs` and the heap or the resident memory has grown `growthBytes` since the last
 * collection, this runs one full collection. Both, because V8 may have shrunk its heap by itself
 * during the burst while keeping the pages it used: the heap then looks small, and the process
 * stays large until a memory-reducing collection gives those pages back. It takes a few tens of milliseconds (a request that comes meanwhile waits that long);
 * under load it never runs, and V8 collects as it always does.
 *
 * Why quiet for seconds rather than for one check: the collection also frees the hidden classes
 * (maps) that no live object uses any more, which between two bursts are those of every request's
 * objects, and V8 throws away the optimized code built against them ("embedded weak objects
 * cleared": 150 to 290 functions of a GET /billing burst). After a one-second quiet, the next
 * burst's first second served 55–65% of the requests of a warm one and its second 80–90%
 * (11,000–12,000/s warm, wrk, 32 connections); with no collection in between, a burst after a
 * 4 s pause ran as fast as a warm one. Traffic with pauses of a few seconds no longer pays that;
 * memory comes back a few seconds later instead.
 */
export interface IdleCollectionOptions {
  checkEveryMs: number;
  /** Event-loop utilization (0–1) over a check below which the process counts as quiet. */
  quietBelow: number;
  /** How long the process must have been quiet, check after check, before it collects. */
  quietForMs: number;
  growthBytes: number;
}

export const IDLE_COLLECTION_DEFAULTS: IdleCollectionOptions = {
  checkEveryMs: 1_000,
  quietBelow: 0.1,
  quietForMs: 5_000,
  growthBytes: 32 * 1024 * 1024,
};

/**
 * The collection an inspector's "collect garbage" asks for: V8's memory-reducing one, which
 * compacts and gives the freed pages back to the system at once (a toy heap of 300 MiB with 26
 * live: resident 361 → 91 MiB on Node 20, 447 → 88 on Node 24). Through an in-process inspector
 * session, which opens no port. A plain `gc()` (`--expose-gc`) frees the objects but, on Node 20,
 * kept the pages: the server's old space stayed at 72 MiB with 23 of them live.
 * Undefined on a Node built without the inspector.
 */
async function inspectorCollection(): Promise<(() => Promise<void>) | undefined> {
  try {
    const { Session } = await import('node:inspector/promises');
    return async () => {
      const session = new Session();
      session.connect();
      try {
        await session.post('HeapProfiler.collectGarbage');
      } finally {
        session.disconnect();
      }
    };
  } catch {
    return undefined;
  }
}

const heapBytes = () => v8.getHeapStatistics().total_heap_size;

export async function startIdleCollection(
  log: Logger,
  options: IdleCollectionOptions = IDLE_COLLECTION_DEFAULTS,
): Promise<{ stop(): void }> {
  const collect = await inspectorCollection();
  if (!collect) {
    log.warn('this Node has no inspector: memory grown under load is given back only when later work makes V8 collect');
    return { stop() {} };
  }
  // Zero at first: the garbage of start-up (the contract compiled into validators) goes once the
  // process has first been quiet long enough.
  let heapAfterCollection = 0;
  let residentAfterCollection = 0;
  let collecting = false;
  let quietChecks = 0;
  const quietChecksNeeded = Math.max(1, Math.ceil(options.quietForMs / options.checkEveryMs));
  let lastUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, lastUtilization).utilization;
    lastUtilization = now;
    quietChecks = busy < options.quietBelow ? quietChecks + 1 : 0;
    if (collecting || quietChecks < quietChecksNeeded) return;
    const before = heapBytes();
    const residentBefore = process.memoryUsage.rss();
    if (before - heapAfterCollection < options.growthBytes && residentBefore - residentAfterCollection < options.growthBytes) return;
    collecting = true;
    const started = performance.now();
    collect()
      .then(() => {
        heapAfterCollection = heapBytes();
        residentAfterCollection = process.memoryUsage.rss();
        log.debug(
          {
            heap_before_mib: mib(before),
            heap_after_mib: mib(heapAfterCollection),
            rss_before_mib: mib(residentBefore),
            rss_after_mib: mib(residentAfterCollection),
            ms: Math.round(performance.now() - started),
          },
          'quiet: collected the garbage of the last burst',
        );
      })
      .catch((error: unknown) => log.warn({ err: error }, 'the collection after a burst failed'))
      .finally(() => (collecting = false));
  }, options.checkEveryMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));
