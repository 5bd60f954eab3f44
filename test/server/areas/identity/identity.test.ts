// Identity and permission: API keys (only a hash stored, scopes by method, expiry, revocation at
// once, last_used_at, the creator's role and scopes), OIDC access tokens from a local issuer,
// and 401 / 403 / 404 across organizations.
import { SignJWT } from 'jose';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../../../support/eventually.ts';
import { startLocalIssuer, type LocalIssuer } from '../../../support/oidc-issuer.ts';
import { call, startTestServer, type TestServer } from '../../../support/server.ts';

let server: TestServer;
let issuer: LocalIssuer;

beforeAll(async () => {
  issuer = await startLocalIssuer();
  server = await startTestServer({ OIDC_ISSUER: issuer.issuer, OIDC_AUDIENCE: issuer.audience });
});
afterAll(async () => {
  await server?.close();
  await issuer?.close();
});

async function createKey(body: object, key?: string) {
  return server.org.call('POST', '/api-tokens', { body, key });
}

describe('API keys', () => {
  test('are cpk_ and 43 base64url characters, shown once; only a SHA-256 hash is stored', async () => {
    const created = await createKey({ name: 'ci-deployer', scopes: ['read', 'write'] });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^cpk_[A-Za-z0-9_-]{43}$/);
    expect(created.body.token).toMatchObject({
      name: 'ci-deployer',
      scopes: ['read', 'write'],
      expires_at: null,
      last_used_at: null,
      revoked_at: null,
    });
    const stored = await server.pool.query('SELECT * FROM api_tokens WHERE id = $1', [created.body.token.id]);
    expect(JSON.stringify(stored.rows[0])).not.toContain(created.body.secret);
    expect(Buffer.from(stored.rows[0].secret_hash).equals(createHash('sha256').update(created.body.secret).digest())).toBe(true);
    const listed = await server.org.call('GET', '/api-tokens');
    expect(listed.text).not.toContain(created.body.secret);
    expect(listed.body.items.some((token: { id: string }) => token.id === created.body.token.id)).toBe(true);
  });

  test('default to read only: a read key reads and may not write', async () => {
    const created = await createKey({ name: 'grafana' });
    expect(created.body.token.scopes).toEqual(['read']);
    const readKey = created.body.secret;
    expect((await server.org.call('GET', '/billing', { key: readKey })).status).toBe(200);
    const write = await server.org.call('PUT', '/billing', { key: readKey, body: { spend_budget_cents: 5 } });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('forbidden');
  });

  test('a write-only key may write and may not read', async () => {
    const created = await createKey({ name: 'writer', scopes: ['write'] });
    const writeKey = created.body.secret;
    expect((await server.org.call('PUT', '/billing', { key: writeKey, body: { spend_budget_cents: 5 } })).status).toBe(200);
    expect((await server.org.call('GET', '/billing', { key: writeKey })).status).toBe(403);
  });

  test('cannot be created with more scopes than the creating credential has', async () => {
    const writeOnly = (await createKey({ name: 'writer-2', scopes: ['write'] })).body.secret;
    const escalation = await createKey({ name: 'sneaky', scopes: ['read', 'write'] }, writeOnly);
    expect(escalation.status).toBe(403);
    expect(escalation.body.detail).toMatch(/read/);
    expect((await createKey({ name: 'fine', scopes: ['write'] }, writeOnly)).status).toBe(201);
  });

  test('act with the role of the member who created them', async () => {
    const memberKey = await server.org.memberKey('member');
    const created = await createKey({ name: 'member-made', scopes: ['read', 'write'] }, memberKey);
    const row = await server.pool.query('SELECT m.role FROM api_tokens t JOIN members m ON m.id = t.member_id WHERE t.id = $1', [
      created.body.token.id,
    ]);
    expect(row.rows[0].role).toBe('member');
  });

  test('an expired key is 401', async () => {
    // The key must be seen working before it expires: a machine too busy to create and use it
    // within the window tries again with a window twice as long.
    let secret: string;
    let expiresAt: number;
    for (let windowMs = 1_500; ; windowMs *= 2) {
      expiresAt = Date.now() + windowMs;
      const created = await createKey({ name: `short-lived-${windowMs}`, expires_at: new Date(expiresAt).toISOString() });
      secret = created.body.secret;
      const status = (await server.org.call('GET', '/billing', { key: secret })).status;
      if (Date.now() < expiresAt) {
        expect(status).toBe(200);
        break;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 100));
    const response = await server.org.call('GET', '/billing', { key: secret });
    expect(response.status).toBe(401);
    expect(response.body.code).toBe('unauthenticated');
  });

  test('expires_at in the past is refused', async () => {
    const response = await createKey({ name: 'already-expired', expires_at: '2020-01-01T00:00:00Z' });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual([expect.objectContaining({ pointer: '/expires_at' })]);
  });

  test('a revoked key stops working at once; revoking again returns it unchanged', async () => {
    const created = await createKey({ name: 'to-revoke', scopes: ['read', 'write'] });
    expect((await server.org.call('GET', '/billing', { key: created.body.secret })).status).toBe(200);
    const revoked = await server.org.call('DELETE', `/api-tokens/${created.body.token.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    expect((await server.org.call('GET', '/billing', { key: created.body.secret })).status).toBe(401);
    const again = await server.org.call('DELETE', `/api-tokens/${created.body.token.id}`);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
  });

  test('last_used_at is set when the key is used', async () => {
    const created = await createKey({ name: 'used' });
    const usedFrom = Date.now();
    await server.org.call('GET', '/billing', { key: created.body.secret });
    // Written off the request path: soon after the use, however soon this machine gets to it.
    const lastUsed = await eventually(async () => {
      const token = (await server.org.call('GET', '/api-tokens')).body.items.find(
        (item: { id: string }) => item.id === created.body.token.id,
      );
      return token.last_used_at ?? undefined;
    }, 'last_used_at');
    // The time of that use: not before it was made, nor after it was read.
    expect(Date.parse(lastUsed)).toBeGreaterThanOrEqual(usedFrom);
    expect(Date.parse(lastUsed)).toBeLessThanOrEqual(Date.now());
  });

  test('name is 1 to 100 characters; unknown fields are refused', async () => {
    expect((await createKey({ name: 'x'.repeat(100) })).status).toBe(201);
    expect((await createKey({ name: 'x'.repeat(101) })).status).toBe(400);
    expect((await createKey({ name: '' })).status).toBe(400);
    expect((await createKey({ name: 'x', admin: true })).status).toBe(400);
  });

  test('list pages newest first', async () => {
    const org = await server.createOrg('Lister');
    for (const name of ['a', 'b', 'c']) await org.call('POST', '/api-tokens', { body: { name } });
    const first = await org.call('GET', '/api-tokens?limit=2');
    expect(first.body.items.map((token: { name: string }) => token.name)).toEqual(['c', 'b']);
    const second = await org.call('GET', `/api-tokens?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.items.map((token: { name: string }) => token.name)).toEqual(['a', 'owner key']);
    expect(second.body.next_cursor).toBeNull();
  });
});

describe('organizations are isolated', () => {
  test("a credential on another organization's path is 403", async () => {
    const other = await server.createOrg('Other');
    const response = await call(server.url, 'GET', `/v1/orgs/${other.orgId}/billing`, { defaultKey: server.org.ownerKey });
    expect(response.status).toBe(403);
    expect(response.body.code).toBe('forbidden');
    const write = await call(server.url, 'PUT', `/v1/orgs/${other.orgId}/billing`, {
      defaultKey: server.org.ownerKey,
      body: { spend_budget_cents: 1 },
    });
    expect(write.status).toBe(403);
    expect((await other.call('GET', '/billing')).body.spend_budget_cents).toBeNull();
  });

  test("another organization's resource under one's own path is 404", async () => {
    const other = await server.createOrg('Other 2');
    const theirKey = (await other.call('POST', '/api-tokens', { body: { name: 'theirs' } })).body.token.id;
    const response = await server.org.call('DELETE', `/api-tokens/${theirKey}`);
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('not_found');
    const theirs = await other.call('GET', '/api-tokens');
    expect(theirs.body.items.find((token: { id: string }) => token.id === theirKey).revoked_at).toBeNull();
  });
});

describe('OIDC access tokens', () => {
  async function member(role: 'owner' | 'member', subject: string) {
    await server.pool.query('INSERT INTO members (id, org_id, subject, issuer, role) VALUES (gen_random_uuid(), $1, $2, $3, $4)', [
      server.org.orgId,
      subject,
      issuer.issuer,
      role,
    ]);
  }

  test('a valid token of a member works, with read and write, and is audited with the issuer as realm', async () => {
    await member('member', 'alice');
    const token = await issuer.token('alice');
    expect((await server.org.call('GET', '/billing', { key: token })).status).toBe(200);
    const write = await server.org.call('PUT', '/billing', { key: token, body: { spend_budget_cents: 12345 } });
    expect(write.status).toBe(200);
    const [event] = (await server.org.call('GET', '/audit-events?action=billing.set_budget&limit=1')).body.items;
    expect(event).toMatchObject({ actor_sub: 'alice', actor_realm: issuer.issuer, actor_token_id: null });
  });

  test.each([
    ['an expired token', async () => issuer.token('alice', { expiresIn: '-1m' })],
    ['another audience', async () => issuer.token('alice', { claims: { aud: 'https://elsewhere.example' } })],
    ['another issuer', async () => issuer.token('alice', { claims: { iss: 'https://evil.example' } })],
    ['a key the issuer does not publish', async () => issuer.token('alice', { key: await issuer.foreignKey() })],
    [
      'an HMAC-signed token',
      async () =>
        new SignJWT({})
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer(issuer.issuer)
          .setAudience(issuer.audience)
          .setSubject('alice')
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode('x'.repeat(32))),
    ],
    [
      'an unsigned token (alg none)',
      async () =>
        `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: issuer.issuer, aud: issuer.audience, sub: 'alice', exp: Math.floor(Date.now() / 1000) + 300 })).toString('base64url')}.`,
    ],
  ])('%s is 401', async (_case, makeToken) => {
    const response = await server.org.call('GET', '/billing', { key: await makeToken() });
    expect(response.status).toBe(401);
    expect(response.body.code).toBe('unauthenticated');
  });

  test('a valid token of someone who is not a member of the organization is 403', async () => {
    const response = await server.org.call('GET', '/billing', { key: await issuer.token('mallory') });
    expect(response.status).toBe(403);
  });
});
