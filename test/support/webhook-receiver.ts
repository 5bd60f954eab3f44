// A webhook receiver on loopback, as a customer would run one: it records every request it gets
// (headers and raw body) and answers with the status the test sets.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** When the answer was sent (undefined until it is). */
  answeredAt?: number;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  received: ReceivedWebhook[];
  /** The status answered from now on (200 at first); a function decides per request. */
  answer(status: number | ((request: ReceivedWebhook) => number)): void;
  /** How long each answer waits from now on (0 at first): a slow receiver. */
  delay(ms: number): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let status: number | ((request: ReceivedWebhook) => number) = 200;
  let delayMs = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedWebhook = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      received.push(request);
      const code = typeof status === 'function' ? status(request) : status;
      setTimeout(() => {
        request.answeredAt = Date.now();
        res.writeHead(code, { 'content-type': 'text/plain' }).end('ok');
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answer: (next) => (status = next),
    delay: (ms) => (delayMs = ms),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
