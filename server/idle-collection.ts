import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './logging.ts';

/**
 * Gives back the memory a burst of work left behind, once the process is quiet.
 *
 * V8 grows its heap under load and frees it only in a later collection, which only allocation
 * starts: Node runs no collection while idle. A server that handled a burst kept its garbage for
 * as long as no new work came. Measured after 10 s of GET requests at 32 connections: on Node 24
 * the server stayed at 400 MiB resident for the 40 s watched (heap 310 MiB, 30 of them live);
 * with this, it was at 140 MiB five seconds after the burst. Node 20: 221 → 167 MiB.
 *
 * Every `checkEveryMs`, when the event loop was busy less than `quietBelow` of that time and the
 * heap has grown `growthBytes` since the last collection, this runs one full collection. It takes
 * a few milliseconds to a few tens of them (a request that comes meanwhile waits that long);
 * under load it never runs, and V8 collects as it always does.
 */
export interface IdleCollectionOptions {
  checkEveryMs: number;
  /** Event-loop utilization (0–1) over the last check below which the process counts as quiet. */
  quietBelow: number;
  growthBytes: number;
}

export const IDLE_COLLECTION_DEFAULTS: IdleCollectionOptions = { checkEveryMs: 1_000, quietBelow: 0.1, growthBytes: 32 * 1024 * 1024 };

/**
 * V8's full collection, as `--expose-gc` gives it (the flag set now reaches contexts made after
 * it). V8 12 and later (Node 22, 24) take options: the "last-resort" flavor also gives the freed
 * pages back to the system at once (Node 24: 400 → 60 MiB resident, where a plain collection left
 * 320). V8 11 (Node 20) takes none (given some, it did not collect) and gives pages back within a
 * second of a plain one.
 */
function fullCollection(): (() => void) | undefined {
  v8.setFlagsFromString('--expose-gc');
  const exposed: unknown = runInNewContext('gc');
  if (typeof exposed !== 'function') return undefined;
  const gc = exposed as (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
  const takesOptions = Number(process.versions.v8.split('.')[0]) >= 12;
  return takesOptions ? () => void gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) : () => void gc();
}

const heapBytes = () => v8.getHeapStatistics().total_heap_size;

export function startIdleCollection(log: Logger, options: IdleCollectionOptions = IDLE_COLLECTION_DEFAULTS): { stop(): void } {
  const collect = fullCollection();
  if (!collect) {
    log.warn('this Node does not give a full garbage collection: memory grown under load is given back only by the next load');
    return { stop() {} };
  }
  // Zero at first: the garbage of start-up (the contract compiled into validators) goes at the
  // first quiet check.
  let heapAfterCollection = 0;
  let lastUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, lastUtilization).utilization;
    lastUtilization = now;
    const before = heapBytes();
    if (busy >= options.quietBelow || before - heapAfterCollection < options.growthBytes) return;
    const started = performance.now();
    collect();
    heapAfterCollection = heapBytes();
    log.debug(
      { heap_before_mib: mib(before), heap_after_mib: mib(heapAfterCollection), ms: Math.round(performance.now() - started) },
      'quiet: collected the garbage of the last burst',
    );
  }, options.checkEveryMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));
