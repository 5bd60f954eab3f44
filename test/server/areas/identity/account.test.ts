// GET /v1/account: whose credential this is. An API key and an OIDC access token each learn the
// organization they open and what the credential is, without knowing the organization's uuid.
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
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

const account = (key: string | null) => call(server.url, 'GET', '/v1/account', { key });

async function addOidcMember(orgId: string, subject: string): Promise<void> {
  await server.pool.query('INSERT INTO members (id, org_id, subject, issuer, role) VALUES (gen_random_uuid(), $1, $2, $3, $4)', [
    orgId,
    subject,
    issuer.issuer,
    'member',
  ]);
}

describe('GET /v1/account', () => {
  test('an API key: its organization, and the key as listApiTokens shows it', async () => {
    const created = await server.org.call('POST', '/api-tokens', {
      body: { name: 'grafana', scopes: ['read'], expires_at: '2099-01-01T00:00:00Z' },
    });
    expect(created.status).toBe(201);
    const answer = await account(created.body.secret);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      org_id: server.org.orgId,
      org_name: 'Acme Robotics',
      credential: { type: 'api_key', id: created.body.token.id, name: 'grafana', scopes: ['read'], expires_at: '2099-01-01T00:00:00.000Z' },
    });
    // Another organization's key learns its own organization.
    const other = await server.createOrg('Globex');
    expect((await account(other.ownerKey)).body).toMatchObject({
      org_id: other.orgId,
      org_name: 'Globex',
      credential: { type: 'api_key', name: 'owner key', scopes: ['read', 'write'], expires_at: null },
    });
  });

  test('an OIDC access token: the organization its subject is a member of, no id, its subject and expiry', async () => {
    await addOidcMember(server.org.orgId, 'carol');
    const token = await issuer.token('carol');
    const answer = await account(token);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      org_id: server.org.orgId,
      org_name: 'Acme Robotics',
      credential: {
        type: 'oidc',
        id: null,
        name: 'carol',
        scopes: ['read', 'write'],
        expires_at: new Date(decodeJwt(token).exp! * 1000).toISOString(),
      },
    });
  });

  test('a token whose subject is a member of no organization, or of several, opens none: 403 naming the way out', async () => {
    const stranger = await account(await issuer.token('nobody-here'));
    expect(stranger.status).toBe(403);
    expect(stranger.body.code).toBe('forbidden');
    const other = await server.createOrg('Initech');
    await addOidcMember(server.org.orgId, 'dave');
    await addOidcMember(other.orgId, 'dave');
    const twice = await account(await issuer.token('dave'));
    expect(twice.status).toBe(403);
    expect(twice.body.detail).toContain('/v1/orgs/{org}');
    // Addressed by its path, each organization still lets the token in.
    const token = await issuer.token('dave');
    expect((await call(server.url, 'GET', `/v1/orgs/${other.orgId}`, { key: token })).status).toBe(200);
  });

  test('401 without a credential, with an unknown or a revoked key, and with an expired token', async () => {
    const missing = await account(null);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(missing.body.code).toBe('unauthenticated');
    expect((await account('cpk_' + 'x'.repeat(43))).status).toBe(401);
    const created = await server.org.call('POST', '/api-tokens', { body: { name: 'short-lived', scopes: ['read'] } });
    await server.org.call('DELETE', `/api-tokens/${created.body.token.id}`);
    expect((await account(created.body.secret)).status).toBe(401);
    await addOidcMember(server.org.orgId, 'erin');
    expect((await account(await issuer.token('erin', { expiresIn: '-1m' }))).status).toBe(401);
  });

  test('the organization paths still refuse a credential of another organization', async () => {
    const other = await server.createOrg('Umbrella');
    const answer = await call(server.url, 'GET', `/v1/orgs/${server.org.orgId}`, { key: other.ownerKey });
    expect(answer.status).toBe(403);
  });
});
