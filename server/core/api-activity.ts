// Whether the API is busy, readable from another thread without a message: the S3 endpoint's
// thread (drivers/embedded/s3/admission.ts) holds S3 back while it is. The API counts as busy
// while two or more of its requests are in flight: they queue for its thread or its database, so
// CPU that S3 takes would lengthen them. One request at a time (a lone client, light traffic) is
// not busy. Under load the event loop can be between requests with the next ones still in their
// sockets, so it stays busy for API_QUIET_AFTER_MS after it last had two at once. Two 32-bit
// cells of shared memory: the requests in flight, and when two or more last were (the low 32
// bits of Date.now()).
import type { Server } from 'node:http';

const IN_FLIGHT = 0;
const LAST_CROWDED = 1;

/** Requests in flight at once from which the API counts as busy. */
export const BUSY_IN_FLIGHT = 2;
/** How long after it last had BUSY_IN_FLIGHT requests in flight the API still counts as busy. */
export const API_QUIET_AFTER_MS = 20;

/** The main thread's side: counts the server's requests into shared memory. */
export class ApiActivity {
  /** Shared with the threads that read it (readApiActivity). */
  readonly buffer = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  private readonly cells = new Int32Array(this.buffer);
  private readonly now: () => number;

  /** `now`: milliseconds since the epoch (a test's own clock). */
  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Requests received and not yet answered (or abandoned). */
  get inFlight(): number {
    return Atomics.load(this.cells, IN_FLIGHT);
  }

  /** Counts each request the server receives until its response closes (answered or abandoned). */
  track(server: Server): void {
    server.on('request', (_req, res) => {
      if (Atomics.add(this.cells, IN_FLIGHT, 1) + 1 >= BUSY_IN_FLIGHT) this.stampCrowded();
      res.once('close', () => {
        if (Atomics.sub(this.cells, IN_FLIGHT, 1) >= BUSY_IN_FLIGHT) this.stampCrowded();
      });
    });
  }

  private stampCrowded(): void {
    Atomics.store(this.cells, LAST_CROWDED, this.now() | 0);
  }
}

/** Another thread's side: whether the API has two or more requests in flight, or had a moment ago. */
export function readApiActivity(buffer: SharedArrayBuffer, now: () => number = Date.now): { busy: () => boolean } {
  const cells = new Int32Array(buffer);
  return {
    busy: () => {
      if (Atomics.load(cells, IN_FLIGHT) >= BUSY_IN_FLIGHT) return true;
      const lastCrowded = Atomics.load(cells, LAST_CROWDED);
      if (lastCrowded === 0) return false; // never busy yet
      // Both times are the low 32 bits of milliseconds: their difference wraps correctly. A clock
      // set back reads as long ago rather than as a busy spell that never ends.
      const sinceCrowded = ((now() | 0) - lastCrowded) | 0;
      return sinceCrowded >= 0 && sinceCrowded < API_QUIET_AFTER_MS;
    },
  };
}
