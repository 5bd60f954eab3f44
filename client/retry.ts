// Retries with exponential backoff and full jitter, for requests that are safe to repeat.
import { PlatformNetworkError } from './errors.ts';
import type { RetryOptions } from './types.ts';

export const retryStatuses: ReadonlySet<number> = new Set([429, 502, 503, 504]);
const idempotentMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export const defaultRetryOptions: Required<RetryOptions> = { maxAttempts: 4, maxElapsedMs: 30_000, baseDelayMs: 500, maxDelayMs: 8_000 };

/** GET, PUT and DELETE are idempotent; a POST is when it carries an `Idempotency-Key`. */
export function isIdempotent(request: Request): boolean {
  return idempotentMethods.has(request.method) || (request.method === 'POST' && request.headers.has('idempotency-key'));
}

/**
 * A fetch that retries an idempotent request on 429, 502, 503, 504 and network errors: at most
 * `maxAttempts` attempts, none started after `maxElapsedMs`. The pause honours `Retry-After`,
 * else is a full-jitter exponential backoff. An abort (of the request's signal) rejects at once
 * with the signal's reason; network errors left after the last attempt become a PlatformNetworkError.
 */
export function retryingFetch(fetchImpl: (request: Request) => Promise<Response>, options: RetryOptions = {}) {
  const policy = { ...defaultRetryOptions, ...options };
  return async (request: Request): Promise<Response> => {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      request.signal.throwIfAborted();
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await fetchImpl(request.clone());
      } catch (error) {
        if (request.signal.aborted) throw request.signal.reason ?? error;
        failure = error;
      }
      const retryable = response === undefined || retryStatuses.has(response.status);
      const delay = (response && retryAfterMs(response)) ?? backoffMs(attempt, policy);
      const giveUp =
        !retryable || !isIdempotent(request) || attempt >= policy.maxAttempts || Date.now() - started + delay > policy.maxElapsedMs;
      if (giveUp) {
        if (response) return response;
        throw new PlatformNetworkError(request, attempt, failure);
      }
      response?.body?.cancel().catch(() => undefined); // frees the connection; not awaited (a tee'd body settles late)
      await sleep(delay, request.signal);
    }
  };
}

/** Full jitter: uniform in [0, min(maxDelayMs, baseDelayMs·2^(attempt-1))]. */
function backoffMs(attempt: number, policy: Required<RetryOptions>): number {
  return Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
}

/** `Retry-After` in seconds or as an HTTP date, in milliseconds; undefined when absent or unreadable. */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(reasonOf(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(reasonOf(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Why a signal aborted, as an Error (an AbortSignal's reason is a DOMException unless given another). */
function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
}
