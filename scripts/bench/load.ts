// A bounded load run against one URL on 127.0.0.1 (autocannon in this process): a fixed number
// of connections for a fixed time, after a short warm-up that is not counted.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

export interface LoadRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** A URL on 127.0.0.1 (path and query included). */
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** Each request carries an Idempotency-Key of its own (creating requests). */
  freshIdempotencyKey?: boolean;
}

export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  /** Requests that failed or were not answered with a 2xx. */
  failures: number;
  /** Requests sent in all, the warm-up's included. */
  sent: number;
}

export interface LoadSettings {
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

export async function load(request: LoadRequest, settings: LoadSettings): Promise<LoadFigures> {
  const target = new URL(request.url);
  if (target.hostname !== '127.0.0.1') throw new Error(`the benchmark only targets 127.0.0.1, not ${target.hostname}`);
  const run = (seconds: number) =>
    autocannon({
      url: target.origin,
      connections: settings.connections,
      duration: seconds,
      timeout: 10,
      requests: [
        {
          method: request.method,
          path: `${target.pathname}${target.search}`,
          headers: { ...(request.body === undefined ? {} : { 'content-type': 'application/json' }), ...request.headers },
          body: request.body,
          ...(request.freshIdempotencyKey
            ? { setupRequest: (built) => ({ ...built, headers: { ...built.headers, 'idempotency-key': randomUUID() } }) }
            : {}),
        },
      ],
    });
  const warmup = settings.warmupSeconds > 0 ? (await run(settings.warmupSeconds)).requests.total : 0;
  const result = await run(settings.seconds);
  return {
    rps: result.requests.total / settings.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.errors + result.timeouts + result.non2xx,
    sent: warmup + result.requests.total,
  };
}
