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
  /** The sender's end of the connection it came on (`address:port`): one connection, one value. */
  connection: string;
  /** It came on a connection that had carried a request before, and the receiver reset it unanswered (`resetReused`). */
  reset?: true;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  received: ReceivedWebhook[];
  /** The status answered from now on (200 at first); a function decides per request. */
  answer(status: number | ((request: ReceivedWebhook) => number)): void;
  /** How long each answer waits from now on (0 at first): a slow receiver. */
  delay(ms: number): void;
  /** From now on, a request on a connection that carried one before is reset unanswered (a receiver that dropped it idle). */
  resetReused(on: boolean): void;
  /**
   * From now on, requests to paths starting with `prefix` are answered only once the returned
   * function is called (a receiver that hangs): however long that takes, and however loaded the
   * machine, they stay open until then.
   */
  hold(prefix: string): () => void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let status: number | ((request: ReceivedWebhook) => number) = 200;
  let delayMs = 0;
  let resetting = false;
  const held = new Map<string, Array<() => void>>();
  const served = new WeakSet<object>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedWebhook = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
        connection: `${req.socket.remoteAddress}:${req.socket.remotePort}`,
      };
      received.push(request);
      if (resetting && served.has(req.socket)) {
        request.reset = true;
        req.socket.resetAndDestroy();
        return;
      }
      served.add(req.socket);
      const code = typeof status === 'function' ? status(request) : status;
      const respond = () => {
        request.answeredAt = Date.now();
        res.writeHead(code, { 'content-type': 'text/plain' }).end('ok');
      };
      const holding = [...held.keys()].find((prefix) => request.path.startsWith(prefix));
      if (holding !== undefined) held.get(holding)!.push(respond);
      else setTimeout(respond, delayMs);
    });
  });
  // Idle connections are the sender's to close: a test that sees them reused does not depend on
  // how long the platform took between two deliveries.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answer: (next) => (status = next),
    delay: (ms) => (delayMs = ms),
    resetReused: (on) => (resetting = on),
    hold(prefix) {
      held.set(prefix, []);
      return () => {
        const waiting = held.get(prefix) ?? [];
        held.delete(prefix);
        waiting.forEach((respond) => respond());
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
