// S3 access keys on the real server: the secret shown once (null in a replay) and kept only in
// the secret store, issuing through the object store, listing, revoking, and isolation.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { ObjectStoreSimulator } from '../../../../server/drivers/simulators/object-store.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { objectStoreOf } from './support.ts';

let server: TestServer;
let org: TestOrg;
let store: ObjectStoreSimulator;

beforeAll(async () => {
  server = await startTestServer();
  org = server.org;
  store = objectStoreOf(server);
});
afterAll(() => server?.close());

/** The platform's own tables (not the simulated backends') in which `text` appears. */
async function ourTablesHolding(text: string): Promise<string[]> {
  const { rows } = await server.pool.query<{ tablename: string }>(
    `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'sim\\_%'`,
  );
  const holding: string[] = [];
  for (const { tablename } of rows) {
    const found = await server.pool.query(`SELECT 1 FROM "${tablename}" t WHERE t::text LIKE '%' || $1 || '%' LIMIT 1`, [text]);
    if (found.rowCount) holding.push(tablename);
  }
  return holding;
}

async function activeKey(owner: TestOrg = org): Promise<{ key: any; secret: string }> {
  const created = await owner.call('POST', '/s3/access-keys');
  expect(created.status, created.text).toBe(202);
  await server.waitForOperation(owner, created.body.operation.id);
  const listed = (await owner.call('GET', '/s3/access-keys?limit=200')).body.items;
  return { key: listed.find((item: { id: string }) => item.id === created.body.access_key.id), secret: created.body.secret_access_key };
}

test('creating a key returns the secret once; the key is issued by the object store', async () => {
  const created = await org.call('POST', '/s3/access-keys');
  expect(created.status, created.text).toBe(202);
  const { access_key: key, operation, secret_access_key: secret } = created.body;
  expect(secret).toMatch(/^[A-Za-z0-9/+]{40}$/);
  expect(key).toMatchObject({
    state: 'issuing',
    objectstore_access_key_id: null,
    secretstore_path: `orgs/${org.orgId}/s3-access-keys/${key.id}`,
    last_rotated_at: null,
    operation_id: operation.id,
  });
  expect(operation).toMatchObject({ type: 'access_key.create', resource_type: 'access_key', resource_id: key.id });

  expect((await server.waitForOperation(org, operation.id)).state).toBe('succeeded');
  const listed = (await org.call('GET', '/s3/access-keys')).body.items.find((item: { id: string }) => item.id === key.id);
  expect(listed.state).toBe('active');
  expect(listed.objectstore_access_key_id).toMatch(/^[A-Z0-9]{20}$/);
  expect(listed).not.toHaveProperty('secret_access_key');
  expect(await store.acceptsCredentials(listed.objectstore_access_key_id, secret)).toBe(true);
});

test('the secret is kept only in the secret store, never in our tables', async () => {
  const { key, secret } = await activeKey();
  expect(await store.secrets.get(key.secretstore_path)).toBe(secret);
  expect(await ourTablesHolding(secret)).toEqual([]);
  // The search does find what our tables hold.
  expect(await ourTablesHolding(key.objectstore_access_key_id)).toContain('s3_access_keys');
});

test('an idempotent replay returns the same key with secret_access_key null', async () => {
  const headers = { 'Idempotency-Key': 'issue-key-once' };
  const first = await org.call('POST', '/s3/access-keys', { headers });
  const replay = await org.call('POST', '/s3/access-keys', { headers });
  expect(first.body.secret_access_key).toMatch(/^[A-Za-z0-9/+]{40}$/);
  expect(replay.status).toBe(202);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  expect(replay.body.access_key.id).toBe(first.body.access_key.id);
  expect(replay.body.operation.id).toBe(first.body.operation.id);
  expect(replay.body.secret_access_key).toBeNull();
  expect(await ourTablesHolding(first.body.secret_access_key)).toEqual([]);
});

test('revoking: revoking, then revoked with the secret destroyed; the object store refuses the key', async () => {
  const { key, secret } = await activeKey();
  const accepted = await org.call('DELETE', `/s3/access-keys/${key.id}`);
  expect(accepted.status, accepted.text).toBe(202);
  expect(accepted.body.access_key.state).toBe('revoking');
  expect(accepted.body.operation).toMatchObject({ type: 'access_key.revoke', resource_id: key.id });
  await server.waitForOperation(org, accepted.body.operation.id);

  const listed = (await org.call('GET', '/s3/access-keys?limit=200')).body.items.find((item: { id: string }) => item.id === key.id);
  expect(listed).toMatchObject({
    state: 'revoked',
    secretstore_path: null,
    objectstore_access_key_id: key.objectstore_access_key_id,
    operation_id: accepted.body.operation.id,
  });
  expect(await store.secrets.get(key.secretstore_path)).toBeNull();
  expect(await store.acceptsCredentials(key.objectstore_access_key_id, secret)).toBe(false);

  const again = await org.call('DELETE', `/s3/access-keys/${key.id}`);
  expect(again.status).toBe(409);
  expect(again.body.code).toBe('access_key_state_conflict');
});

test('keys are listed oldest first, in pages, revoked ones included', async () => {
  const lister = await server.createOrg('Key Lister');
  const first = await activeKey(lister);
  const second = await activeKey(lister);
  await server.waitForOperation(lister, (await lister.call('DELETE', `/s3/access-keys/${first.key.id}`)).body.operation.id);
  const page1 = await lister.call('GET', '/s3/access-keys?limit=1');
  expect(page1.body.items.map((item: { id: string }) => item.id)).toEqual([first.key.id]);
  expect(page1.body.items[0].state).toBe('revoked');
  const page2 = await lister.call('GET', `/s3/access-keys?limit=1&cursor=${page1.body.next_cursor}`);
  expect(page2.body.items.map((item: { id: string }) => item.id)).toEqual([second.key.id]);
  expect(page2.body.next_cursor).toBeNull();
});

test("another organization gets 404 for this organization's keys and never sees them", async () => {
  const { key } = await activeKey();
  const other = await server.createOrg('Key Snooper');
  const response = await other.call('DELETE', `/s3/access-keys/${key.id}`);
  expect(response.status).toBe(404);
  expect(response.body.code).toBe('not_found');
  expect((await other.call('GET', '/s3/access-keys')).body.items).toEqual([]);
  expect((await org.call('DELETE', '/s3/access-keys/7a9c1e3f-5b7d-4f9a-8c1e-3f5b7d9a1c48')).status).toBe(404);
});

test('a read-only key may list keys but not create or revoke them', async () => {
  const reader = await org.memberKey('member', ['read']);
  expect((await org.call('GET', '/s3/access-keys', { key: reader })).status).toBe(200);
  expect((await org.call('POST', '/s3/access-keys', { key: reader })).status).toBe(403);
});
