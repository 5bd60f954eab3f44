import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { DeliveryAttempt } from './delivery-rows.ts';

/** What an attempt reads of an answer at most: a receiver cannot make the platform hold more. */
export const MAX_ANSWER_BYTES = 64 * 1024;

export interface SignedPost {
  url: URL;
  /** Where to connect: the addresses the URL's host resolved to, each already checked (url-safety.ts). */
  addresses: readonly string[];
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/** How an attempt went, as its record shows it (less the time it was made). */
export type AttemptResult = Omit<DeliveryAttempt, 'attempted_at'>;

/**
 * One attempt: a POST to the URL, connecting only to the checked address (the host name is still
 * the one TLS verifies and `Host` names), so that a name resolved again between the check and the
 * connection cannot lead anywhere else (DNS rebinding). Never follows a redirect (a 3xx is a
 * failed attempt), gives up at `timeoutMs` from the start, and reads at most MAX_ANSWER_BYTES of
 * the answer. Never throws: every ending is a result.
 */
export function postSigned(post: SignedPost): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.min(600_000, Math.round(performance.now() - started));
  const address = post.addresses[0]!;
  const family = isIP(address);
  // The one address, whatever is asked: a connection to this host goes where the check said.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as (error: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const send = post.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      post.signal.removeEventListener('abort', onAbort);
      req.destroy();
      resolve(result);
    };
    const req = send(post.url, {
      method: 'POST',
      headers: { ...post.headers, 'content-length': String(Buffer.byteLength(post.body)) },
      lookup: pinned,
      // A connection of its own: nothing pooled outlives the attempt.
      agent: false,
    });
    const timer = setTimeout(() => finish({ status_code: null, latency_ms: latency(), outcome: 'timeout' }), post.timeoutMs);
    const onAbort = () => finish({ status_code: null, latency_ms: latency(), outcome: 'timeout' });
    post.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', () => finish({ status_code: null, latency_ms: latency(), outcome: 'connection_failed' }));
    req.on('response', (answer: IncomingMessage) => {
      const status = answer.statusCode ?? 0;
      const result: AttemptResult = {
        status_code: status >= 100 && status <= 599 ? status : null,
        latency_ms: latency(),
        outcome: status >= 200 && status < 300 ? 'succeeded' : 'http_error',
      };
      // The answer is read (so that the receiver's write completes) up to the bound, then dropped.
      let read = 0;
      answer.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) finish(result);
      });
      answer.on('end', () => finish(result));
      answer.on('error', () => finish(result));
    });
    req.end(post.body);
  });
}
