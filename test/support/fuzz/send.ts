// Sends a fuzz request as it is: node:http with the fuzzer's own headers in its order, the path
// unnormalised, the body as bytes. fetch would normalise the path, refuse some header values and
// set its own framing; here only the bytes of FuzzRequest go out (one connection per request, so
// that one broken exchange cannot spill into the next).
import http from 'node:http';
import type { FuzzRequest } from './draft.ts';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  elapsedMs: number;
}

export type Outcome = { answer: Answer } | { error: string; elapsedMs: number };

export function send(baseUrl: string, request: FuzzRequest, timeoutMs: number): Promise<Outcome> {
  const url = new URL(baseUrl);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    let client: http.ClientRequest;
    try {
      client = http.request({
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.target,
        // A flat [name, value, name, value, …] list keeps order and repeated headers.
        headers: request.headers.flat(),
        setHost: false,
        agent: false,
      });
    } catch (error) {
      // Node refused to send it: a fuzzer bug, reported as such rather than as a server failure.
      throw new Error(`node:http cannot send ${request.method} ${request.target.slice(0, 200)}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    client.setTimeout(timeoutMs, () => {
      client.destroy();
      settle({ error: `no answer within ${timeoutMs} ms`, elapsedMs: elapsed() });
    });
    client.on('error', (error) =>
      settle({ error: `${(error as NodeJS.ErrnoException).code ?? 'error'}: ${error.message}`, elapsedMs: elapsed() }),
    );
    client.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', (error) => settle({ error: `reading the answer: ${error.message}`, elapsedMs: elapsed() }));
      response.on('end', () =>
        settle({
          answer: { status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), elapsedMs: elapsed() },
        }),
      );
    });
    client.end(request.body);
  });
}
