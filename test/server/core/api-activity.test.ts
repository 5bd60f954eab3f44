// The API's activity as another thread reads it (core/api-activity.ts): busy while two or more
// requests are in flight, answered or abandoned, and for a moment after; one at a time is not busy.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { API_QUIET_AFTER_MS, ApiActivity, readApiActivity } from '../../../server/core/api-activity.ts';
import { eventually } from '../../support/eventually.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** The writer's and the readers' clock, where a test wants it. */
const clock = 1_000_000;

/** A server whose requests are answered only when the test says so, its activity counted. */
async function heldServer() {
  const activity = new ApiActivity(() => clock);
  const held: Array<() => void> = [];
  server = createServer((_req, res) => held.push(() => res.end('done')));
  activity.track(server);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  /** Sends a request; resolves with its status once answered. */
  const send = () => {
    const sent = request({ port, host: '127.0.0.1', agent: false });
    const answered = new Promise<number>((resolve, reject) => {
      sent.on('response', (res) => resolve(res.statusCode!));
      sent.on('error', reject);
    });
    sent.end();
    return { sent, answered };
  };
  return { activity, held, send };
}

/** A reader whose clock is `aheadMs` past the writer's. */
const readerAhead = (activity: ApiActivity, aheadMs: number) => readApiActivity(activity.buffer, () => clock + aheadMs);

test('busy while two requests are in flight, and for a moment after; one at a time is not', async () => {
  const { activity, held, send } = await heldServer();
  expect(readerAhead(activity, 0).busy()).toBe(false);
  const first = send();
  await eventually(() => held.length === 1 || undefined, 'the first request to arrive');
  expect(activity.inFlight).toBe(1);
  expect(readerAhead(activity, 0).busy()).toBe(false);
  const second = send();
  await eventually(() => held.length === 2 || undefined, 'the second request to arrive');
  // However long ago the API was last busy, two in flight are busy.
  expect(readerAhead(activity, 0).busy()).toBe(true);
  expect(readerAhead(activity, 60_000).busy()).toBe(true);
  held[0]!();
  expect(await first.answered).toBe(200);
  await eventually(() => activity.inFlight === 1 || undefined, 'the first request to count as ended');
  // One left in flight; two were a moment ago (at the clock's time): busy for API_QUIET_AFTER_MS, then not.
  expect(readerAhead(activity, API_QUIET_AFTER_MS - 1).busy()).toBe(true);
  expect(readerAhead(activity, API_QUIET_AFTER_MS).busy()).toBe(false);
  // A clock set back does not make the API busy until it catches up.
  expect(readerAhead(activity, -5_000).busy()).toBe(false);
  held[1]!();
  expect(await second.answered).toBe(200);
  await eventually(() => activity.inFlight === 0 || undefined, 'the second request to count as ended');
  expect(readerAhead(activity, API_QUIET_AFTER_MS).busy()).toBe(false);
});

test('requests whose clients went away stop counting', async () => {
  const { activity, held, send } = await heldServer();
  const abandoned = [send(), send()];
  for (const { answered } of abandoned) answered.catch(() => {});
  await eventually(() => held.length === 2 || undefined, 'the requests to arrive');
  expect(readerAhead(activity, 60_000).busy()).toBe(true);
  for (const { sent } of abandoned) sent.destroy();
  await eventually(() => activity.inFlight === 0 || undefined, 'the abandoned requests to stop counting');
  expect(readerAhead(activity, 60_000).busy()).toBe(false);
});
