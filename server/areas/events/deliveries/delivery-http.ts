import type { Agent, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { http } from '../../../node-http.ts';
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
  /** Connections kept open to this origin and address (receiver-connections.ts); false: one of its own. */
  agent: Agent | false;
}

/** How an attempt went, as its record shows it (less the time it was made). */
export type AttemptResult = Omit<DeliveryAttempt, 'attempted_at'>;

/**
 * One attempt: a POST to the URL, connecting only to the checked address (the host name is still
 * the one TLS verifies and `Host` names), so that a name resolved again between the check and the
 * connection cannot lead anywhere else (DNS rebinding). Never follows a redirect (a 3xx is a
 * failed attempt), gives up at `timeoutMs` from the start, and reads at most MAX_ANSWER_BYTES of
 * the answer. A connection kept from an earlier attempt that the receiver closed meanwhile (reset
 * before any answer) is not the receiver failing: the POST is sent again on another. A connection
 * is kept for the next attempt only after a whole answer. Never throws: every ending is a result.
 */
export async function postSigned(post: SignedPost): Promise<AttemptResult> {
  const started = performance.now();
  for (;;) {
    const sent = await postOnce(post, started);
    if (sent !== 'closed by the receiver') return sent;
  }
}

function postOnce(post: SignedPost, started: number): Promise<AttemptResult | 'closed by the receiver'> {
  const latency = () => Math.min(600_000, Math.round(performance.now() - started));
  const address = post.addresses[0]!;
  const family = isIP(address);
  // The one address, whatever is asked: a connection to this host goes where the check said.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as (error: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const send = post.url.protocol === 'https:' ? httpsRequest : http.request;
  return new Promise((resolve) => {
    let settled = false;
    let answered = false;
    /** `keep`: the answer was read whole, and its connection may serve the next attempt. */
    const finish = (result: AttemptResult | 'closed by the receiver', keep = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      post.signal.removeEventListener('abort', onAbort);
      if (!keep) req.destroy();
      resolve(result);
    };
    const req = send(post.url, {
      method: 'POST',
      headers: { ...post.headers, 'content-length': String(Buffer.byteLength(post.body)) },
      lookup: pinned,
      agent: post.agent,
    });
    const left = post.timeoutMs - (performance.now() - started);
    const timer = setTimeout(() => finish({ status_code: null, latency_ms: latency(), outcome: 'timeout' }), Math.max(0, left));
    const onAbort = () => finish({ status_code: null, latency_ms: latency(), outcome: 'timeout' });
    if (post.signal.aborted) onAbort();
    else post.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error: NodeJS.ErrnoException) => {
      const stale = req.reusedSocket && !answered && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      finish(stale ? 'closed by the receiver' : { status_code: null, latency_ms: latency(), outcome: 'connection_failed' });
    });
    req.on('response', (answer: IncomingMessage) => {
      answered = true;
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
      answer.on('end', () => finish(result, true));
      answer.on('error', () => finish(result));
    });
    req.end(post.body);
  });
}
