// Webhooks against a real receiver on loopback (the development switch on): every delivery is
// signed as Standard Webhooks says (checked with the `standardwebhooks` package), carries the
// event exactly as the log shows it, and its webhook-id is the event's id; a failing receiver is
// retried on the schedule, then disabled with an event saying so; a rotation signs with both
// secrets; a resend repeats the webhook-id.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../../../support/webhook-receiver.ts';
import { runningVm } from '../compute/fixtures.ts';

let server: TestServer;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    WEBHOOK_ALLOW_INSECURE: 'true',
    WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms',
    WEBHOOK_DISPATCH_INTERVAL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_ENDPOINT_CONCURRENCY: '2',
    // Longer than any pause between two deliveries of a test, however loaded the machine.
    WEBHOOK_KEEP_ALIVE_MS: '60000',
  });
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

async function createEndpoint(org: TestOrg, path: string, body: Record<string, unknown> = {}) {
  const created = await org.call('POST', '/webhook-endpoints', { body: { url: `${receiver.url}${path}`, ...body } });
  expect(created.status, created.text).toBe(201);
  return created.body as { webhook_endpoint: { id: string }; secret: string };
}

const at = (path: string) => receiver.received.filter((request) => request.path === path);

function verified(secret: string, request: ReceivedWebhook): any {
  return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
}

describe('a webhook endpoint', () => {
  test('is created with a whsec_ secret shown once; reads and replays never show it', async () => {
    const { org } = server;
    const created = await org.call('POST', '/webhook-endpoints', {
      body: { url: `${receiver.url}/once`, description: 'Deploy pipeline' },
      headers: { 'Idempotency-Key': 'create-once' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.body.webhook_endpoint).toMatchObject({
      url: `${receiver.url}/once`,
      event_types: ['*'],
      enabled: true,
      disabled_reason: null,
    });
    const replay = await org.call('POST', '/webhook-endpoints', {
      body: { url: `${receiver.url}/once`, description: 'Deploy pipeline' },
      headers: { 'Idempotency-Key': 'create-once' },
    });
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual({ webhook_endpoint: created.body.webhook_endpoint });
    const read = await org.call('GET', `/webhook-endpoints/${created.body.webhook_endpoint.id}`);
    expect(read.body).toEqual(created.body.webhook_endpoint);
    const listed = await org.call('GET', '/webhook-endpoints');
    expect(listed.text).not.toContain(created.body.secret);
    const stored = await server.pool.query('SELECT secret_sealed FROM webhook_endpoints WHERE id = $1', [created.body.webhook_endpoint.id]);
    expect(stored.rows[0].secret_sealed).not.toContain(created.body.secret.slice(6));
    expect((await org.call('DELETE', `/webhook-endpoints/${created.body.webhook_endpoint.id}`)).status).toBe(204);
  });

  test('receives each event signed, with the webhook-id of the event and the body the log shows', async () => {
    const org = await server.createOrg('Signed deliveries');
    const { secret } = await createEndpoint(org, '/signed');
    const key = await org.call('POST', '/api-tokens', { body: { name: 'announced' } });
    expect(key.status).toBe(201);
    const vm = await runningVm(server, org);

    const log = await eventually(async () => {
      const page = (await org.call('GET', '/events?limit=200')).body.items as any[];
      const types = page.map((event) => event.type);
      return types.includes('operation.succeeded') && types.includes('instance.state_changed') && types.includes('api_key.created')
        ? page
        : undefined;
    }, 'the events in the log');
    const created = log.find((event) => event.type === 'api_key.created');
    expect(created).toMatchObject({ resource_type: 'api_token', resource_id: key.body.token.id, data: { api_key: key.body.token } });
    expect(JSON.stringify(created)).not.toContain(key.body.secret);
    const ended = log.find((event) => event.type === 'operation.succeeded');
    expect(ended.data.operation).toMatchObject({ type: 'vm.create', resource_id: vm.id, state: 'succeeded' });
    const running = log.find((event) => event.type === 'instance.state_changed' && event.data.state === 'running');
    expect(running.data).toMatchObject({ vm_id: vm.id, previous_state: 'creating', state: 'running' });

    const requests = await eventually(() => (at('/signed').length >= log.length ? at('/signed') : undefined), 'every event delivered');
    for (const request of requests) {
      const body = verified(secret, request);
      expect(request.headers['webhook-id']).toBe(body.id);
      expect(request.headers['content-type']).toBe('application/json');
      const inLog = await org.call('GET', `/events/${body.id}`);
      expect(inLog.status).toBe(200);
      expect(body).toEqual(inLog.body);
    }
    // Tampering is caught: the signature covers id, timestamp and body.
    const tampered = { ...requests[0]!, body: requests[0]!.body.replace('"type"', '"typo"') };
    expect(() => verified(secret, tampered)).toThrow();
    expect(() => verified(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, requests[0]!)).toThrow();
  });

  test('a failing receiver is retried on the schedule, then disabled, and another endpoint hears of it', async () => {
    const org = await server.createOrg('Failing receiver');
    const watcher = await createEndpoint(org, '/watcher', { event_types: ['webhook_endpoint.disabled'] });
    receiver.answer((request) => (request.path === '/failing' ? 503 : 200));
    try {
      const failing = await createEndpoint(org, '/failing', { event_types: ['api_key.created'] });
      await org.call('POST', '/api-tokens', { body: { name: 'never acknowledged' } });
      const delivery = await eventually(async () => {
        const page = (await org.call('GET', `/webhook-endpoints/${failing.webhook_endpoint.id}/deliveries`)).body;
        return page.items[0]?.status === 'failed' ? page.items[0] : undefined;
      }, 'the delivery to fail');
      // The first attempt and one per pause of the schedule: four, each answered 503.
      expect(delivery.attempts).toHaveLength(4);
      expect(delivery.attempts.map((attempt: any) => [attempt.status_code, attempt.outcome])).toEqual(Array(4).fill([503, 'http_error']));
      const times = delivery.attempts.map((attempt: any) => Date.parse(attempt.attempted_at));
      [100, 200, 300].forEach((pause, index) => expect(times[index + 1] - times[index]).toBeGreaterThanOrEqual(pause - 5));
      const sent = at('/failing');
      expect(sent).toHaveLength(4);
      expect(new Set(sent.map((request) => request.headers['webhook-id']))).toEqual(new Set([delivery.event_id]));

      const endpoint = (await org.call('GET', `/webhook-endpoints/${failing.webhook_endpoint.id}`)).body;
      expect(endpoint).toMatchObject({ enabled: false, disabled_reason: 'failing' });
      expect(endpoint.failing_since).not.toBeNull();
      const announced = (await org.call('GET', '/events?type=webhook_endpoint.disabled')).body.items;
      expect(announced).toHaveLength(1);
      expect(announced[0]).toMatchObject({ resource_id: failing.webhook_endpoint.id, data: { webhook_endpoint: endpoint } });
      const heard = await eventually(() => at('/watcher').find((request) => request.headers['webhook-id'] === announced[0].id));
      expect(verified(watcher.secret, heard)).toEqual(announced[0]);

      // Disabled: nothing more is sent, and a test is refused until it is enabled again.
      await org.call('POST', '/api-tokens', { body: { name: 'after the disablement' } });
      const refused = await org.call('POST', `/webhook-endpoints/${failing.webhook_endpoint.id}/test`);
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('webhook_endpoint_disabled');
      receiver.answer(200);
      const enabled = await org.call('PATCH', `/webhook-endpoints/${failing.webhook_endpoint.id}`, { body: { enabled: true } });
      expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
      const ping = await org.call('POST', `/webhook-endpoints/${failing.webhook_endpoint.id}/test`);
      expect(ping.status, ping.text).toBe(202);
      const pinged = await eventually(() => at('/failing').find((request) => request.headers['webhook-id'] === ping.body.event.id));
      expect(verified(failing.secret, pinged)).toMatchObject({ type: 'ping', data: { webhook_endpoint_id: failing.webhook_endpoint.id } });
      expect(at('/failing')).toHaveLength(5);
    } finally {
      receiver.answer(200);
    }
  });

  test('a slow receiver has at most the endpoint concurrency of attempts at once, and hears every event', async () => {
    const org = await server.createOrg('Slow receiver');
    await createEndpoint(org, '/slow', { event_types: ['api_key.created'] });
    receiver.delay(500);
    try {
      const created = await Promise.all(
        Array.from({ length: 8 }, (_, index) => org.call('POST', '/api-tokens', { body: { name: `slow-${index}` } })),
      );
      expect(created.map((response) => response.status)).toEqual(Array(8).fill(201));
      const requests = await eventually(
        () => {
          const sent = at('/slow');
          return sent.length >= 8 && sent.every((request) => request.answeredAt !== undefined) ? sent : undefined;
        },
        'every event answered',
        30_000,
      );
      expect(new Set(requests.map((request) => request.headers['webhook-id'])).size).toBe(8);
      // The most requests open at once: at each arrival, those that arrived and were not answered yet.
      const open = requests.map(
        (request) => requests.filter((other) => other.receivedAt <= request.receivedAt && request.receivedAt < other.answeredAt!).length,
      );
      expect(Math.max(...open)).toBeLessThanOrEqual(2);
    } finally {
      receiver.delay(0);
    }
  });

  test("one organization's hanging receivers hold its share of the attempts, never another organization's", async () => {
    // Three attempts at once in all, two for an organization: without a share per organization,
    // the hanging receivers would take all three, and the other organization would wait for them.
    const slots = await startTestServer({
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_DISPATCH_INTERVAL_MS: '100',
      // The hanging attempts never time out while the test runs.
      WEBHOOK_TIMEOUT_MS: '60000',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      WEBHOOK_ORG_CONCURRENCY: '2',
      WEBHOOK_MAX_IN_FLIGHT: '3',
    });
    const release = receiver.hold('/hanging');
    try {
      const hanging = await slots.createOrg('Hanging receivers');
      await createEndpoint(hanging, '/hanging-1', { event_types: ['api_key.created'] });
      await createEndpoint(hanging, '/hanging-2', { event_types: ['api_key.created'] });
      for (let index = 0; index < 3; index++)
        expect((await hanging.call('POST', '/api-tokens', { body: { name: `hung-${index}` } })).status).toBe(201);
      const stuck = () => receiver.received.filter((request) => request.path.startsWith('/hanging'));
      await eventually(() => stuck().length >= 2 || undefined, 'the hanging receivers hold two attempts', 30_000);

      const waiting = await slots.createOrg('Waiting for nobody');
      await createEndpoint(waiting, '/answered', { event_types: ['api_key.created'] });
      expect((await waiting.call('POST', '/api-tokens', { body: { name: 'prompt' } })).status).toBe(201);
      await eventually(
        () => at('/answered').find((request) => request.answeredAt !== undefined),
        'the other organization is served',
        30_000,
      );
      // Meanwhile the hanging organization got no attempt beyond its two, and none was answered.
      expect(stuck()).toHaveLength(2);
      expect(stuck().every((request) => request.answeredAt === undefined)).toBe(true);
    } finally {
      release();
      await slots.close();
    }
  });

  test('deliveries one after another reuse one connection; one the receiver reset idle is not a failed attempt', async () => {
    const org = await server.createOrg('Kept connection');
    const endpoint = await createEndpoint(org, '/kept', { event_types: ['api_key.created'] });
    const delivered = (count: number) =>
      eventually(() => {
        const sent = at('/kept').filter((request) => !request.reset);
        return sent.length >= count && sent.every((request) => request.answeredAt !== undefined) ? sent : undefined;
      }, `${count} deliveries answered`);
    for (let count = 1; count <= 3; count++) {
      await org.call('POST', '/api-tokens', { body: { name: `kept-${count}` } });
      await delivered(count);
    }
    expect(new Set(at('/kept').map((request) => request.connection)).size).toBe(1);

    // The receiver drops the kept connection under the next request: it is sent again on a new
    // one, and the delivery's record shows one attempt, which succeeded.
    receiver.resetReused(true);
    try {
      await org.call('POST', '/api-tokens', { body: { name: 'kept-after-reset' } });
      const sent = await delivered(4);
      // Each connection kept to this receiver (earlier tests' too) is tried and reset, then a new one serves.
      const reset = at('/kept').filter((request) => request.reset);
      expect(reset.length).toBeGreaterThanOrEqual(1);
      expect(new Set(reset.map((request) => request.headers['webhook-id']))).toEqual(new Set([sent[3]!.headers['webhook-id']]));
      expect(reset.map((request) => request.connection)).not.toContain(sent[3]!.connection);
      const deliveries = await eventually(async () => {
        const items = (await org.call('GET', `/webhook-endpoints/${endpoint.webhook_endpoint.id}/deliveries`)).body.items;
        return items.length === 4 && items.every((delivery: any) => delivery.status === 'succeeded') ? items : undefined;
      });
      expect(deliveries.map((delivery: any) => delivery.attempts.map((attempt: any) => attempt.outcome))).toEqual(
        Array(4).fill(['succeeded']),
      );
    } finally {
      receiver.resetReused(false);
    }
  });

  test('after a rotation both secrets sign until the previous one expires', async () => {
    const org = await server.createOrg('Rotation');
    const first = await createEndpoint(org, '/rotated', { event_types: ['ping'] });
    const rotated = await org.call('POST', `/webhook-endpoints/${first.webhook_endpoint.id}/rotate-secret`);
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.secret).not.toBe(first.secret);
    const expires = Date.parse(rotated.body.webhook_endpoint.previous_secret_expires_at);
    expect(expires - Date.now()).toBeGreaterThan(23 * 3_600_000);
    const ping = await org.call('POST', `/webhook-endpoints/${first.webhook_endpoint.id}/test`);
    const request = await eventually(() => at('/rotated').find((candidate) => candidate.headers['webhook-id'] === ping.body.event.id));
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(rotated.body.secret, request).id).toBe(ping.body.event.id);
    expect(verified(first.secret, request).id).toBe(ping.body.event.id);
  });

  test('a resend is a new delivery with the same webhook-id', async () => {
    const org = await server.createOrg('Resend');
    const endpoint = await createEndpoint(org, '/resent', { event_types: ['ping'] });
    const ping = await org.call('POST', `/webhook-endpoints/${endpoint.webhook_endpoint.id}/test`);
    await eventually(async () => {
      const page = (await org.call('GET', `/webhook-endpoints/${endpoint.webhook_endpoint.id}/deliveries`)).body;
      return page.items[0]?.status === 'succeeded' ? page : undefined;
    });
    const resent = await org.call('POST', `/webhook-endpoints/${endpoint.webhook_endpoint.id}/deliveries/${ping.body.delivery.id}/resend`);
    expect(resent.status, resent.text).toBe(202);
    expect(resent.body.id).not.toBe(ping.body.delivery.id);
    expect(resent.body.event_id).toBe(ping.body.event.id);
    const both = await eventually(() => (at('/resent').length === 2 ? at('/resent') : undefined));
    expect(both.map((request) => request.headers['webhook-id'])).toEqual([ping.body.event.id, ping.body.event.id]);
    // The receiver has the request before the server records the attempt's answer: read until recorded.
    const deliveries = await eventually(async () => {
      const items = (await org.call('GET', `/webhook-endpoints/${endpoint.webhook_endpoint.id}/deliveries?event_id=${ping.body.event.id}`))
        .body.items;
      return items.length === 2 && items[0].attempts.length > 0 ? items : undefined;
    });
    expect(deliveries[0].attempts[0]).toMatchObject({ status_code: 200, outcome: 'succeeded' });
  });

  test("webhook deliveries are no organization's operations", async () => {
    const org = await server.createOrg('Jobs unseen');
    const endpoint = await createEndpoint(org, '/jobs', { event_types: ['ping'] });
    await org.call('POST', `/webhook-endpoints/${endpoint.webhook_endpoint.id}/test`);
    await eventually(() => (at('/jobs').length === 1 ? true : undefined));
    expect((await org.call('GET', '/operations')).body.items).toEqual([]);
  });
});
