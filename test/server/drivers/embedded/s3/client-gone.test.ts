// Whether an S3 request's error is its client's going away or the database's outage. Both come as
// ECONNRESET; taken for the database's, a client that hung up during a download was logged as "the
// database is unavailable; answered 503" (seen in a run of Ceph's suite), which an operator
// watching for outages would be paged for.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { clientGone } from '../../../../../server/drivers/embedded/s3/server.ts';

let close: (() => Promise<void>) | undefined;
afterEach(async () => close?.());

/** A server whose one request is handed to the test, and the raw client that sent it. */
async function oneRequest(): Promise<{ req: IncomingMessage; res: ServerResponse; client: ReturnType<typeof connect> }> {
  let handed: (pair: { req: IncomingMessage; res: ServerResponse }) => void;
  const received = new Promise<{ req: IncomingMessage; res: ServerResponse }>((resolve) => (handed = resolve));
  const server = createServer((req, res) => handed({ req, res }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () => new Promise((resolve) => server.close(() => resolve()) && server.closeAllConnections());
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.on('error', () => {});
  client.write('GET /bucket/big HTTP/1.1\r\nHost: s3\r\n\r\n');
  return { ...(await received), client };
}

test('a reset while the answer streams, its client gone, is the client going away', async () => {
  const { req, res, client } = await oneRequest();
  res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) });
  res.write(Buffer.alloc(1024 * 1024));
  const closed = new Promise((resolve) => res.once('close', resolve));
  client.resetAndDestroy();
  // What the download's pipeline sees once its writes fail with the reset.
  await closed;
  expect(clientGone(req, res, 'ECONNRESET')).toBe(true);
});

test('a reset while its client is still there is not the client going away (the database reset its connection)', async () => {
  const { req, res } = await oneRequest();
  expect(clientGone(req, res, 'ECONNRESET')).toBe(false);
  // Cut bodies and closed sockets are the client's whatever else holds.
  expect(clientGone(req, res, 'EPIPE')).toBe(true);
  res.end();
});
