// The S3 endpoint yields to a busy API. The two share a machine's cores, and an S3 request costs
// CPU in places a nice value cannot lower (its client, V8's collector threads, libuv's file
// threads): with 32 clients PUTting small objects, the API's p99 grew to three to six times its
// p99 at rest. So while the API is busy (core/api-activity.ts), the endpoint starts at most
// `busyRate` S3 requests a second; the others wait their turn, in the order they came, with their
// bodies unread (their clients wait, and spend nothing meanwhile); and bodies pass at
// `busyBytesPerSecond`, uploads and downloads all together (a download costs reads and socket
// writes, and an encrypted one its decryption), never holding a body more than MAX_HOLD_MS at a
// time. Once the API is quiet, every waiting request starts at once, and bodies flow at full
// speed. A request that would wait more than MAX_WAIT_SECONDS is refused with S3's 503 SlowDown,
// which S3 clients retry after a pause.
import type { ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { S3Error } from './errors.ts';

/** The longest a request is kept waiting while the API is busy: more would be refused. */
export const MAX_WAIT_SECONDS = 5;
/** How often waiting requests look whether the API has become quiet. */
const RECHECK_MS = 5;
/** After a pause in the pace, at most this long's worth of starts go at once. */
const BURST_MS = 50;
/**
 * The longest a body's bytes are held at a time, however many transfers share the pace: a client
 * gives up on a connection that stalls long (the AWS CLI after 60 s without a byte), and a body
 * held for its turn is not stalled. With more transfers than the pace can serve in that time,
 * each still moves a piece every MAX_HOLD_MS, and the pace gives way.
 */
export const MAX_HOLD_MS = 1_000;

export interface AdmissionSettings {
  /** Whether the API is busy now (core/api-activity.ts). */
  apiBusy: () => boolean;
  /** S3 requests started a second at most while the API is busy; 0: no limit. */
  busyRate: number;
  /** Bytes of bodies a second at most while the API is busy, uploads and downloads together; 0: no limit. */
  busyBytesPerSecond: number;
  /** Milliseconds, monotonic. */
  now?: () => number;
}

export interface Admission {
  /** Calls `start` when the request may start, or `refuse` with SlowDown when it would wait too long. */
  admit(res: ServerResponse, start: () => void, refuse: (error: S3Error) => void): void;
  /** Requests waiting their turn now. */
  readonly waiting: number;
  /** A stream an upload's bytes pass through: while the API is busy, at `busyBytesPerSecond`. */
  bodyPace: () => Transform;
  /** Resolves when a download may send its next `bytes`: at once, or, while the API is busy, at its turn. */
  sendPace: (bytes: number) => Promise<void>;
}

const NOW = Promise.resolve();

interface Waiting {
  res: ServerResponse;
  start: () => void;
}

export function admission({ apiBusy, busyRate, busyBytesPerSecond, now = () => performance.now() }: AdmissionSettings): Admission {
  const interval = busyRate > 0 ? 1000 / busyRate : 0;
  const maxWaiting = Math.max(1, Math.floor(busyRate * MAX_WAIT_SECONDS));
  const queue: Waiting[] = [];
  /** When the next request may start while the API is busy. */
  let nextStart = 0;
  let timer: NodeJS.Timeout | undefined;

  /** Whether a request may start now; a start while the API is busy takes its place in the pace. */
  const takeTurn = (): boolean => {
    if (busyRate === 0 || !apiBusy()) return true;
    const at = now();
    nextStart = Math.max(nextStart, at - BURST_MS);
    if (nextStart > at) return false;
    nextStart += interval;
    return true;
  };

  /** When the bodies' next byte may pass while the API is busy. */
  let nextByte = 0;
  /** How long `bytes` wait for their turn (0: they go now); their turn is taken either way. */
  const bytesTurn = (bytes: number): number => {
    if (busyBytesPerSecond === 0 || !apiBusy()) return 0;
    const at = now();
    nextByte = Math.min(Math.max(nextByte, at - BURST_MS), at + MAX_HOLD_MS);
    const wait = nextByte - at;
    nextByte += (bytes / busyBytesPerSecond) * 1000;
    return Math.max(0, wait);
  };

  const drain = (): void => {
    timer = undefined;
    while (queue.length > 0) {
      // A client that went away while it waited is not started.
      if (queue[0]!.res.destroyed) {
        queue.shift();
        continue;
      }
      if (!takeTurn()) break;
      queue.shift()!.start();
    }
    if (queue.length > 0) timer = setTimeout(drain, RECHECK_MS);
  };

  return {
    admit(res, start, refuse) {
      if (queue.length === 0 && takeTurn()) return start();
      if (queue.length >= maxWaiting) {
        return refuse(new S3Error('SlowDown', 503, 'Please reduce your request rate.', {}, { 'Retry-After': '1' }));
      }
      queue.push({ res, start });
      timer ??= setTimeout(drain, RECHECK_MS);
    },
    get waiting() {
      return queue.length;
    },
    bodyPace: () =>
      new Transform({
        transform(chunk: Buffer, _encoding, passed) {
          const wait = bytesTurn(chunk.length);
          if (wait === 0) passed(null, chunk);
          else setTimeout(() => passed(null, chunk), wait);
        },
      }),
    sendPace: (bytes) => {
      const wait = bytesTurn(bytes);
      return wait === 0 ? NOW : new Promise((resolve) => setTimeout(resolve, wait));
    },
  };
}
