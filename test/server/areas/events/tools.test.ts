// The tools of the events: the typed client's verifyWebhook accepts what the platform signs and
// refuses anything else; `cloud events list` reads the log; `cloud events listen` follows it and
// forwards each new event, signed with the session's secret, to a local receiver.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runCli, type Io } from '../../../../client/cli/main.ts';
import { verifyWebhook, WebhookVerificationError } from '../../../../client/index.ts';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer, type TestServer } from '../../../support/server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../support/webhook-receiver.ts';

let server: TestServer;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_DISPATCH_INTERVAL_MS: '100' });
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

function io(): Io & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    env: {},
    stdin: () => '',
    ask: async () => undefined,
    isTty: false,
  };
}

describe('verifyWebhook', () => {
  test('returns the event of a delivery the platform signed, and refuses a forged or altered one', async () => {
    const created = await server.org.call('POST', '/webhook-endpoints', { body: { url: `${receiver.url}/client`, event_types: ['ping'] } });
    const ping = await server.org.call('POST', `/webhook-endpoints/${created.body.webhook_endpoint.id}/test`);
    const request = await eventually(() => receiver.received.find((candidate) => candidate.path === '/client'));
    const event = verifyWebhook(created.body.secret, request.headers, request.body);
    expect(event).toEqual(ping.body.event);
    if (event.type === 'ping') expect(event.data.webhook_endpoint_id).toBe(created.body.webhook_endpoint.id);
    const headers = new Headers(request.headers as Record<string, string>);
    expect(verifyWebhook(created.body.secret, headers, new TextEncoder().encode(request.body)).id).toBe(ping.body.event.id);
    expect(() =>
      verifyWebhook(created.body.secret, request.headers as Record<string, string>, request.body.replace('ping', 'pong')),
    ).toThrow(WebhookVerificationError);
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(() => verifyWebhook(other, request.headers as Record<string, string>, request.body)).toThrow(WebhookVerificationError);
  });
});

describe('cloud events', () => {
  const flags = () => ['--base-url', server.url, '--api-key', server.org.ownerKey, '--org', server.org.orgId];

  test('list shows the log', async () => {
    await server.org.call('POST', '/api-tokens', { body: { name: 'listed' } });
    const out = io();
    expect(await runCli(['events', 'list', '--type', 'api_key.created', '-o', 'json', ...flags()], out)).toBe(0);
    const page = JSON.parse(out.out.join(''));
    expect(page.items[0]).toMatchObject({ type: 'api_key.created', data: { api_key: { name: 'listed' } } });
  });

  test('listen forwards each new event, signed with the secret it prints, to a local URL', async () => {
    // Listening until the test has seen what it forwarded, then interrupted as Ctrl-C would (a
    // fixed --for ran out first on a busy machine); --for only bounds a test that fails.
    const interrupt = new AbortController();
    const out = { ...io(), interrupted: interrupt.signal };
    const listening = runCli(
      ['events', 'listen', '--forward-to', `${receiver.url}/local`, '--for', '60', '--poll-ms', '100', ...flags()],
      out,
    );
    await eventually(() => (out.err.join('').includes('Ready') ? true : undefined), 'Ready', 30_000);
    const secret = /(whsec_\S+)/.exec(out.err.join(''))![1]!;
    const key = await server.org.call('POST', '/api-tokens', { body: { name: 'forwarded' } });
    const forwarded = await eventually(() => receiver.received.find((request) => request.path === '/local'), 'the forwarded event', 30_000);
    const event = verifyWebhook(secret, forwarded.headers, forwarded.body);
    expect(event).toMatchObject({ type: 'api_key.created', data: { api_key: key.body.token } });
    expect(forwarded.headers['webhook-id']).toBe(event.id);
    // A few more polls see the same event again; then Ctrl-C.
    await new Promise((resolve) => setTimeout(resolve, 500));
    interrupt.abort();
    expect(await listening).toBe(0);
    // Each event once, however many polls saw it.
    expect(receiver.received.filter((request) => request.path === '/local' && request.headers['webhook-id'] === event.id)).toHaveLength(1);
  });

  test('an event made as soon as listen says Ready is forwarded, however long its first read of the log took', async () => {
    // A proxy in front of the server holds the listener's first read of the log for a second:
    // an event made the moment Ready is printed must still be forwarded, not counted as old.
    let heldFirstRead = false;
    const proxy = createServer((req, res) => {
      const pass = () => {
        const upstream = request(new URL(req.url!, server.url), { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        });
        req.pipe(upstream);
      };
      if (!heldFirstRead && req.url!.includes('/events')) {
        heldFirstRead = true;
        setTimeout(pass, 1_000);
      } else pass();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const interrupt = new AbortController();
      const out = { ...io(), interrupted: interrupt.signal };
      const listening = runCli(
        [
          'events',
          'listen',
          '--forward-to',
          `${receiver.url}/first`,
          '--for',
          '60',
          '--poll-ms',
          '100',
          '--base-url',
          proxyUrl,
          '--api-key',
          server.org.ownerKey,
          '--org',
          server.org.orgId,
        ],
        out,
      );
      await eventually(() => (out.err.join('').includes('Ready') ? true : undefined), 'Ready', 30_000);
      const key = await server.org.call('POST', '/api-tokens', { body: { name: 'made at once' } });
      const forwarded = await eventually(
        () => receiver.received.find((request) => request.path === '/first'),
        'the event made at once to be forwarded',
        30_000,
      );
      expect(JSON.parse(forwarded.body)).toMatchObject({ type: 'api_key.created', data: { api_key: key.body.token } });
      interrupt.abort();
      expect(await listening).toBe(0);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
