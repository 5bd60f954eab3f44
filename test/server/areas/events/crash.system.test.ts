// Deliveries survive a crash: the server is killed (SIGKILL) while attempts are under way at a
// slow receiver, another process starts on the same database, and every event of the log arrives
// at least once, signed; a message that arrives twice carries the same webhook-id, and the
// deliveries end succeeded, in agreement with what the receiver got. A process stopped (SIGTERM)
// hands its attempts back: the next one sends them at once, without waiting for their leases.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, expect, test } from 'vitest';
import { eventually } from '../../../support/eventually.ts';
import type { Started } from '../../../support/processes.ts';
import { call, createTestDatabase, readBootstrap, startServerProcess } from '../../../support/server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver.ts';

const running: Started[] = [];
let receiver: WebhookReceiver | undefined;
let stoppedReceiver: WebhookReceiver | undefined;
afterAll(async () => {
  await Promise.all(running.map((process) => process.stop()));
  await receiver?.close();
  await stoppedReceiver?.close();
});

const EVENTS = 24;

/**
 * A server process on a new database with webhooks to `receiver` (the development switch on, a
 * retry schedule of short pauses, `env` besides), its first organization's API, and an endpoint
 * at `receiver` for api_key.created.
 */
async function deliveringServer(receiver: WebhookReceiver, path: string, env: Record<string, string>) {
  const databaseUrl = await createTestDatabase();
  const serverEnv = {
    WEBHOOK_ALLOW_INSECURE: 'true',
    WEBHOOK_DISPATCH_INTERVAL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '5000',
    // Processes sharing a database share the key that seals the endpoints' secrets.
    SECRET_STORE_KEY: randomBytes(32).toString('base64'),
    ...env,
  };
  const first = await startServerProcess(databaseUrl, serverEnv);
  running.push(first);
  const credentials = await readBootstrap(first.dataDir);
  const api = (base: string) => (method: string, urlPath: string, body?: unknown) =>
    call(`${base}/v1/orgs/${credentials.org_id}`, method, urlPath, {
      defaultKey: credentials.api_key,
      ...(body === undefined ? {} : { body }),
    });
  const created = await api(first.url)('POST', '/webhook-endpoints', { url: `${receiver.url}${path}`, event_types: ['api_key.created'] });
  expect(created.status, created.text).toBe(201);
  /** Another process on the same database and data directory. */
  const next = async () => {
    const started = await startServerProcess(databaseUrl, serverEnv, { dataDir: first.dataDir });
    running.push(started);
    return started;
  };
  return { first, api, created, next };
}

test('killed mid-delivery, the next process delivers every event at least once, duplicates with the same webhook-id', async () => {
  receiver = await startWebhookReceiver();
  // Each answer takes a second: attempts are certainly under way when the process dies.
  receiver.delay(1_000);
  const { first, api, created, next } = await deliveringServer(receiver, '/crash', {
    WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms,1s,2s',
    WORKER_LEASE_MS: '1500',
  });
  const secret = created.body.secret as string;
  for (let index = 0; index < EVENTS; index++) {
    const key = await api(first.url)('POST', '/api-tokens', { name: `crash-${index}` });
    expect(key.status, key.text).toBe(201);
  }
  // Attempts under way (the receiver has requests it has not answered yet): the process dies.
  await eventually(() => (receiver!.received.length >= 2 ? true : undefined), 'attempts under way', 20_000);
  process.kill(-first.child.pid!, 'SIGKILL');
  await new Promise((resolve) => (first.child.exitCode !== null ? resolve(null) : first.child.once('exit', resolve)));
  const beforeRestart = receiver.received.length;
  expect(beforeRestart).toBeLessThan(EVENTS);

  receiver.delay(0);
  const second = await next();
  const log = (await api(second.url)('GET', '/events?type=api_key.created&limit=200')).body.items as Array<{ id: string }>;
  expect(log).toHaveLength(EVENTS);
  const logIds = new Set(log.map((event) => event.id));

  await eventually(
    () => {
      const arrived = new Set(receiver!.received.map((request) => request.headers['webhook-id']));
      return [...logIds].every((id) => arrived.has(id)) ? true : undefined;
    },
    'every event delivered',
    60_000,
  );
  // Every message is one of the log's events, signed, its body the event the webhook-id names:
  // one that arrived twice is the same message, with the same webhook-id.
  const byId = new Map<string, string[]>();
  for (const request of receiver.received) {
    const body = new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as { id: string };
    expect(request.headers['webhook-id']).toBe(body.id);
    expect(logIds.has(body.id)).toBe(true);
    byId.set(body.id, [...(byId.get(body.id) ?? []), request.body]);
  }
  for (const [, bodies] of byId) expect(new Set(bodies).size).toBe(1);

  // The deliveries agree with the receiver: each succeeded, and the interrupted ones show it.
  const deliveries = await eventually(async () => {
    const items = (await api(second.url)('GET', `/webhook-endpoints/${created.body.webhook_endpoint.id}/deliveries?limit=200`)).body
      .items as any[];
    return items.length === EVENTS && items.every((delivery) => delivery.status === 'succeeded') ? items : undefined;
  }, 'every delivery succeeded');
  expect(new Set(deliveries.map((delivery) => delivery.event_id))).toEqual(logIds);
}, 180_000);

test('stopped mid-delivery, the process hands its attempts back and the next sends them at once', async () => {
  stoppedReceiver = await startWebhookReceiver();
  // Leases far longer than the test: an attempt not handed back would wait this long.
  const { first, api, created, next } = await deliveringServer(stoppedReceiver, '/stop', { WORKER_LEASE_MS: '600000' });
  for (let index = 0; index < 6; index++) expect((await api(first.url)('POST', '/api-tokens', { name: `stop-${index}` })).status).toBe(201);
  await eventually(() => (stoppedReceiver!.received.length >= 1 ? true : undefined), 'attempts under way', 20_000);
  first.child.kill('SIGTERM');
  await new Promise((resolve) => (first.child.exitCode !== null ? resolve(null) : first.child.once('exit', resolve)));
  expect(first.child.exitCode).toBe(0);

  stoppedReceiver.delay(0);
  const second = await next();
  const deliveries = await eventually(
    async () => {
      const items = (await api(second.url)('GET', `/webhook-endpoints/${created.body.webhook_endpoint.id}/deliveries?limit=200`)).body
        .items as any[];
      return items.length === 6 && items.every((delivery) => delivery.status === 'succeeded') ? items : undefined;
    },
    'every delivery succeeded',
    60_000,
  );
  const arrived = new Set(stoppedReceiver.received.map((request) => request.headers['webhook-id']));
  expect(new Set(deliveries.map((delivery) => delivery.event_id))).toEqual(arrived);
}, 120_000);
