// JSON answers as they go on the wire: UTF-8 declared in Content-Type, a Content-Length that counts
// bytes (not characters), and a body that parses to what was stored, for a small answer and for
// one of several kilobytes (the server writes the prepared text itself: server/http/send.ts).
// Every JSON and problem answer ends with one newline, so that curl's outputs do not run together.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { rawExchange } from '../../support/raw-http.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../support/server.ts';

let server: TestServer;
let org: TestOrg;
beforeAll(async () => {
  server = await startTestServer();
  org = await server.createOrg('Encodings');
});
afterAll(() => server?.close());

/** A request of the organization's path (a GET unless told), as raw bytes and headers. */
async function raw(
  orgPath: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; type: string | null; length: number; bytes: Buffer }> {
  const response = await fetch(`${server.url}/v1/orgs/${org.orgId}${orgPath}`, {
    method: init.method,
    headers: { Authorization: `Bearer ${org.ownerKey}`, ...(init.body ? { 'Content-Type': 'application/json' } : {}), ...init.headers },
    body: init.body,
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    length: Number(response.headers.get('content-length')),
    bytes,
  };
}

describe('JSON answers', () => {
  test('declare UTF-8 and count bytes, small and large, with characters of several bytes', async () => {
    const names = Array.from({ length: 12 }, (_, index) => `café ☕ 東京 🚀 ${index} ${'ü'.repeat(40)}`);
    for (const name of names) expect((await org.call('POST', '/api-tokens', { body: { name, scopes: ['read'] } })).status).toBe(201);

    const one = await raw('/api-tokens?limit=1');
    const all = await raw('/api-tokens?limit=100');
    for (const answer of [one, all]) {
      expect(answer.status).toBe(200);
      expect(answer.type).toBe('application/json; charset=utf-8');
      expect(answer.length).toBe(answer.bytes.length);
    }
    expect(all.bytes.length).toBeGreaterThan(2_000);
    const listed = (JSON.parse(all.bytes.toString('utf8')) as { items: Array<{ name: string }> }).items.map((token) => token.name);
    for (const name of names) expect(listed).toContain(name);
  });

  test('a large answer, whose head the server writes apart from its body, arrives whole, and the connection serves the next', async () => {
    const bytesBefore = (await raw('/api-tokens?limit=100')).bytes.length;
    for (let index = 0; index < 100; index++) {
      const name = `large ${index} ${'ß'.repeat(50)} 🚀`;
      expect((await org.call('POST', '/api-tokens', { body: { name, scopes: ['read'] } })).status).toBe(201);
    }
    // Twice in a row on the same keep-alive connection: a head or body left over would garble the second.
    for (const round of [1, 2]) {
      const large = await raw('/api-tokens?limit=100');
      expect(large.status, `round ${round}`).toBe(200);
      expect(large.type).toBe('application/json; charset=utf-8');
      expect(large.length).toBe(large.bytes.length);
      const text = large.bytes.toString('utf8');
      expect(text.length).toBeGreaterThan(16 * 1024);
      expect(large.bytes.length).toBeGreaterThan(bytesBefore);
      expect((JSON.parse(text) as { items: unknown[] }).items).toHaveLength(100);
      expect(text.endsWith('}\n')).toBe(true);
    }
  });
});

describe('every JSON answer ends with one newline, counted in Content-Length', () => {
  /** The answer's text, once its length and its one final newline are checked. */
  function line(answer: { length: number; bytes: Buffer }): string {
    expect(answer.length).toBe(answer.bytes.length);
    const text = answer.bytes.toString('utf8');
    expect(text).toMatch(/[}\]]\n$/);
    return text;
  }

  test('a success, a problem, and a spend budget beyond 2^53 written with its exact digits', async () => {
    const read = await raw('/billing');
    expect(read.type).toBe('application/json; charset=utf-8');
    line(read);

    const unknown = await raw('/compute/volumes');
    expect(unknown.status).toBe(404);
    expect(unknown.type).toBe('application/problem+json; charset=utf-8');
    line(unknown);

    const budget = await raw('/billing', { method: 'PUT', body: '{"spend_budget_cents": 9223372036854775807}' });
    expect(budget.status).toBe(200);
    expect(line(budget)).toContain('"spend_budget_cents":9223372036854775807');
  });

  test('a replay of an Idempotency-Key too, success and problem alike', async () => {
    const create = { method: 'POST', headers: { 'Idempotency-Key': 'newline-replay' }, body: '{"name":"replayed","scopes":["read"]}' };
    const first = await raw('/api-tokens', create);
    const replay = await raw('/api-tokens', create);
    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    line(first);
    // The replay leaves out the secret shown once, and is otherwise the first answer.
    expect(line(replay)).toBe(line(first).replace(/,"secret":"[^"]+"/, ''));

    const refuse = { method: 'POST', headers: { 'Idempotency-Key': 'newline-refused' }, body: '{"name":"","scopes":["read"]}' };
    const refused = await raw('/api-tokens', refuse);
    const refusedAgain = await raw('/api-tokens', refuse);
    expect(refused.status).toBe(400);
    expect(refusedAgain.status).toBe(400);
    line(refused);
    line(refusedAgain);
  });

  test("a request Node's parser refuses is answered with a problem that ends with a newline", async () => {
    const { received } = await rawExchange(server.url, ['GET /billing HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n']);
    const [head = '', body = ''] = received.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1])).toBe(Buffer.byteLength(body, 'latin1'));
    expect(body).toMatch(/"code":"malformed_request".*}\n$/);
  });
});
