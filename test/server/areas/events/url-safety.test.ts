// Webhook URLs are refused unless https and every address they resolve to is public: loopback,
// private, link-local and metadata addresses, literal or behind a DNS name (a test resolver
// stands in for DNS), in every spelling. The check is made again at each delivery, so a name that
// resolves elsewhere later (DNS rebinding) gets nothing sent. The development switch allows http
// and loopback, and nothing else.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { refusedAddress } from '../../../../server/areas/events/webhook-endpoints/url-safety.ts';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer, type TestServer } from '../../../support/server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver.ts';

/** The test's DNS: names and what they resolve to, changed by the tests. */
const names = new Map<string, string[]>([
  ['metadata.test', ['169.254.169.254']],
  ['private.test', ['10.1.2.3']],
  ['mixed.test', ['93.184.216.34', '192.168.0.10']],
  ['v6-metadata.test', ['fd00:ec2::254']],
  ['loopback.test', ['127.0.0.1']],
]);
const resolveHost = async (hostname: string) => names.get(hostname) ?? [];

describe('the address rules', () => {
  test('refuse loopback, private, link-local, metadata and other non-public addresses in every form', () => {
    for (const address of ['127.0.0.1', '127.255.0.9', '::1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '100.64.0.1', 'fd00::1', 'fe80::1'])
      expect(refusedAddress(address, false), address).toBeDefined();
    for (const address of [
      '169.254.169.254',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      'fd00:ec2::254',
      '0.0.0.0',
      '::',
    ])
      expect(refusedAddress(address, false), address).toBeDefined();
    expect(refusedAddress('::ffff:7f00:1', false)).toBe('a loopback address');
  });

  test('allow public addresses, and loopback only when development allows it', () => {
    for (const address of ['93.184.216.34', '2606:4700::6810:84e5', '8.8.8.8'])
      expect(refusedAddress(address, false), address).toBeUndefined();
    expect(refusedAddress('127.0.0.1', true)).toBeUndefined();
    expect(refusedAddress('::ffff:127.0.0.1', true)).toBeUndefined();
    expect(refusedAddress('10.0.0.1', true)).toBe('a private address');
    expect(refusedAddress('169.254.169.254', true)).toBe('a link-local or metadata address');
  });
});

describe('a platform as deployed (no development switch)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({}, { resolveHost });
  });
  afterAll(() => server?.close());

  test.each([
    ['http://hooks.example.com/in', 'must use https'],
    ['https://127.0.0.1/in', 'loopback'],
    ['https://[::1]/in', 'loopback'],
    ['https://2130706433/in', 'loopback'],
    ['https://[::ffff:127.0.0.1]/in', 'loopback'],
    ['https://10.0.0.8/in', 'private'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['https://metadata.test/computeMetadata/v1/', 'metadata.test resolves to 169.254.169.254'],
    ['https://v6-metadata.test/', 'private'],
    ['https://private.test/in', 'private.test resolves to 10.1.2.3'],
    ['https://mixed.test/in', 'mixed.test resolves to 192.168.0.10'],
    ['https://loopback.test/in', 'loopback'],
    ['https://unknown.test/in', 'does not resolve'],
    ['https://user:pass@hooks.example.com/in', 'user name or password'],
  ])('%s is refused (%s)', async (url, reason) => {
    const answer = await server.org.call('POST', '/webhook-endpoints', { body: { url } });
    expect(answer.status, answer.text).toBe(422);
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
    expect(answer.body.code).toBe('webhook_url_not_allowed');
    expect(answer.body.detail).toContain(reason);
    expect(answer.body.errors).toEqual([{ pointer: '/url', detail: answer.body.detail }]);
  });

  test('an update to a refused URL is refused too, and changes nothing', async () => {
    // Created directly: a public address is never created by these tests (nothing may be sent there).
    const { rows } = await server.pool.query(
      `INSERT INTO webhook_endpoints (id, org_id, url, event_types, enabled, disabled_reason, secret_sealed)
       VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/in', '{ping}', false, 'disabled_by_user', 'sealed') RETURNING id`,
      [server.org.orgId],
    );
    const answer = await server.org.call('PATCH', `/webhook-endpoints/${rows[0].id}`, { body: { url: 'https://metadata.test/' } });
    expect(answer.status).toBe(422);
    expect((await server.org.call('GET', `/webhook-endpoints/${rows[0].id}`)).body.url).toBe('https://hooks.example.com/in');
  });
});

describe('with the development switch', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_DISPATCH_INTERVAL_MS: '100' }, { resolveHost });
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('http and loopback are allowed; private and metadata addresses are still refused', async () => {
    for (const url of ['http://10.0.0.8/in', 'http://metadata.test/', 'http://169.254.169.254/']) {
      const answer = await server.org.call('POST', '/webhook-endpoints', { body: { url } });
      expect(answer.status, url).toBe(422);
    }
    const port = new URL(receiver.url).port;
    const allowed = await server.org.call('POST', '/webhook-endpoints', {
      body: { url: `http://loopback.test:${port}/dev`, event_types: ['ping'] },
    });
    expect(allowed.status, allowed.text).toBe(201);
  });

  test('a name that resolves elsewhere after creation (DNS rebinding) is checked again at delivery: nothing is sent', async () => {
    names.set('rebind.test', ['127.0.0.1']);
    const port = new URL(receiver.url).port;
    const org = await server.createOrg('Rebinding');
    const created = await org.call('POST', '/webhook-endpoints', {
      body: { url: `http://rebind.test:${port}/rebound`, event_types: ['ping'] },
    });
    expect(created.status, created.text).toBe(201);
    const endpointId = created.body.webhook_endpoint.id;

    const first = await org.call('POST', `/webhook-endpoints/${endpointId}/test`);
    await eventually(() => receiver.received.find((request) => request.headers['webhook-id'] === first.body.event.id));
    // The delivery connects to the address checked, with the name in Host: the receiver sees it.
    expect(receiver.received.find((request) => request.headers['webhook-id'] === first.body.event.id)?.headers.host).toBe(
      `rebind.test:${port}`,
    );

    names.set('rebind.test', ['169.254.169.254']);
    const second = await org.call('POST', `/webhook-endpoints/${endpointId}/test`);
    const delivery = await eventually(async () => {
      const items = (await org.call('GET', `/webhook-endpoints/${endpointId}/deliveries?event_id=${second.body.event.id}`)).body.items;
      return items[0]?.attempts.length > 0 ? items[0] : undefined;
    });
    expect(delivery.attempts[0]).toMatchObject({ status_code: null, outcome: 'address_not_allowed' });
    expect(receiver.received.filter((request) => request.headers['webhook-id'] === second.body.event.id)).toEqual([]);
  });
});
