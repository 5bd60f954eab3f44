import { randomFillSync } from 'node:crypto';

/** Bytes drawn from the system's generator at once: 256 identifiers of 16 bytes. */
const POOL_BYTES = 4096;

let pool: Buffer = Buffer.alloc(0);
let taken = 0;

/**
 * `size` random bytes for an identifier (an object version's id, a request's id), never for a key:
 * taken from a pool that the system's CSPRNG fills 4 KiB at a time, as `crypto.randomUUID` keeps
 * one. Each `randomBytes` call is a trip into OpenSSL, with a `getpid` for its fork check: 4 to
 * 5 µs each on this machine at rest, and in the S3 thread's profile under small PUTs, its two
 * calls per request were 1.6% of the thread. The pool is replaced, never refilled in place, so the
 * bytes handed out stay what they were.
 */
export function randomIdBytes(size: number): Buffer {
  if (size > POOL_BYTES) throw new RangeError(`randomIdBytes: ${size} bytes is more than an identifier needs`);
  if (taken + size > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafeSlow(POOL_BYTES));
    taken = 0;
  }
  const bytes = pool.subarray(taken, taken + size);
  taken += size;
  return bytes;
}
