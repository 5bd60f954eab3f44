// JSON answers as they go on the wire: UTF-8 declared in Content-Type, a Content-Length that counts
// bytes (not characters), and a body that parses to what was stored, for a small answer and for
// one of several kilobytes (the server writes the prepared text itself: server/http/send.ts).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestOrg, type TestServer } from '../support/server.ts';

let server: TestServer;
let org: TestOrg;
beforeAll(async () => {
  server = await startTestServer();
  org = await server.createOrg('Encodings');
});
afterAll(() => server?.close());

/** A GET of the organization's path, as raw bytes and headers. */
async function raw(orgPath: string): Promise<{ status: number; type: string | null; length: number; bytes: Buffer }> {
  const response = await fetch(`${server.url}/v1/orgs/${org.orgId}${orgPath}`, { headers: { Authorization: `Bearer ${org.ownerKey}` } });
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
    }
  });
});
