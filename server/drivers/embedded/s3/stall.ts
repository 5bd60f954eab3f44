import { Transform, type TransformCallback } from 'node:stream';
import { S3Error } from './errors.ts';

/** S3's answer to a client that stopped sending the body it announced. */
export const requestTimeout = () =>
  new S3Error('RequestTimeout', 400, 'Your socket connection to the server was not read from or written to within the timeout period.');

/**
 * Ends a body whose client stops sending it: a stream the body's bytes pass through first, which
 * fails with RequestTimeout once no byte has come for `timeoutMs` while the store was ready for
 * more. Time the store itself makes the client wait (its disk is behind, so the body is not
 * read) is not counted: only a hungry stream can stall. The clock starts when the store starts
 * reading (for `Expect: 100-continue`, that is when the client is asked for the body).
 */
export function stallGuard(timeoutMs: number): Transform {
  let timer: NodeJS.Timeout | undefined;
  let moved = false;
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      moved = true;
      callback(null, chunk);
    },
    flush(callback) {
      stop();
      callback();
    },
  });
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  const tick = () => {
    // Waiting on the store (bytes queued inside the guard, or downstream full) is not the client's stall.
    const hungry = guard.writableLength === 0 && guard.readableLength < guard.readableHighWaterMark;
    if (moved || !hungry) {
      moved = false;
      return;
    }
    stop();
    guard.destroy(requestTimeout());
  };
  guard.once('pipe', () => {
    timer ??= setInterval(tick, timeoutMs);
    timer.unref();
  });
  guard.once('close', stop);
  return guard;
}
