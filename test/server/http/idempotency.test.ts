// Idempotency-Key (docs/architecture.md): replay of the same request, refusal of another request under
// the same key, 409 while the first still runs, and one resource for concurrent duplicates.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pg from 'pg';
import { fingerprintOf } from '../../../server/core/idempotency.ts';
import { PROCESS_LOCK_NAMESPACE } from '../../../server/db/process-liveness.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const create = (name: string, key: string, extra: object = {}) =>
  server.org.call('POST', '/api-tokens', { body: { name, ...extra }, headers: { 'Idempotency-Key': key } });

async function tokensNamed(name: string): Promise<number> {
  const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM api_tokens WHERE org_id = $1 AND name = $2', [
    server.org.orgId,
    name,
  ]);
  return rows[0].n;
}

describe('Idempotency-Key', () => {
  test('the same key and body replay the first response, without the secret shown once', async () => {
    const key = randomUUID();
    const first = await create('replayed', key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await create('replayed', key);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.token).toEqual(first.body.token);
    expect(second.body.secret).toBeUndefined();
    expect(await tokensNamed('replayed')).toBe(1);
  });

  test('key order in the body does not make another request', async () => {
    const key = randomUUID();
    await server.org.call('POST', '/api-tokens', { rawBody: '{"name":"ordered","scopes":["read"]}', headers: { 'Idempotency-Key': key } });
    const again = await server.org.call('POST', '/api-tokens', {
      rawBody: '{"scopes":["read"],"name":"ordered"}',
      headers: { 'Idempotency-Key': key },
    });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  test('the same key with another body is 422 idempotency_key_reused', async () => {
    const key = randomUUID();
    await create('first-body', key);
    const response = await create('second-body', key);
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('idempotency_key_reused');
    expect(await tokensNamed('second-body')).toBe(0);
  });

  test('the same key on another endpoint is 422 idempotency_key_reused', async () => {
    const key = randomUUID();
    await create('endpoint-a', key);
    const response = await server.org.call('POST', `/operations/${randomUUID()}/cancel`, { headers: { 'Idempotency-Key': key } });
    expect(response.status).toBe(422);
  });

  test('a refusal (4xx) is stored and replayed too', async () => {
    const key = randomUUID();
    const first = await create('too-late', key, { expires_at: '2020-01-01T00:00:00Z' });
    expect(first.status).toBe(400);
    const second = await create('too-late', key, { expires_at: '2020-01-01T00:00:00Z' });
    expect(second.status).toBe(400);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    // The same problem, answered by this request: its request_id is the X-Request-Id it carries.
    expect(second.body).toEqual({ ...first.body, request_id: second.headers.get('x-request-id') });
    expect(second.body.request_id).not.toBe(first.body.request_id);
  });

  test('keys are per organization', async () => {
    const key = randomUUID();
    await create('org-a', key);
    const other = await server.createOrg();
    const theirs = await other.call('POST', '/api-tokens', { body: { name: 'org-b' }, headers: { 'Idempotency-Key': key } });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
  });

  test('a key whose first request is still being processed is 409 idempotency_key_in_use', async () => {
    const key = randomUUID();
    // The state a request leaves while it runs: its key claimed, its response not yet stored.
    // (The fingerprint is of the validated body, in which the contract's default scopes are set.)
    await server.pool.query(
      "INSERT INTO idempotency_keys (org_id, key, fingerprint, state, locked_until) VALUES ($1, $2, $3, 'processing', now() + interval '1 minute')",
      [server.org.orgId, key, fingerprintOf('createApiToken', { org: server.org.orgId }, { name: 'waiting', scopes: ['read'] })],
    );
    const response = await create('waiting', key);
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('idempotency_key_in_use');
    expect(await tokensNamed('waiting')).toBe(0);
  });

  test('simultaneous requests with one key create one resource', async () => {
    const key = randomUUID();
    const results = await Promise.all(Array.from({ length: 8 }, () => create('racing', key)));
    expect(results.every((result) => result.status === 201 || result.status === 409)).toBe(true);
    for (const conflict of results.filter((result) => result.status === 409)) expect(conflict.body.code).toBe('idempotency_key_in_use');
    const ids = new Set(results.filter((result) => result.status === 201).map((result) => result.body.token.id));
    expect(ids.size).toBe(1);
    expect(await tokensNamed('racing')).toBe(1);
  });

  /** What a request leaves while it runs in the process of instance `holder`: its key claimed, nothing committed. */
  async function claimedBy(holder: number, name: string, key: string): Promise<void> {
    await server.pool.query(
      `INSERT INTO idempotency_keys (org_id, key, fingerprint, state, locked_until, holder, claim)
       VALUES ($1, $2, $3, 'processing', now() + interval '1 minute', $4, gen_random_uuid())`,
      [server.org.orgId, key, fingerprintOf('createApiToken', { org: server.org.orgId }, { name, scopes: ['read'] }), holder],
    );
  }

  test('a key claimed by a process that is alive stays in use; once that process is gone (its lock with it), a retry runs at once', async () => {
    // A process's liveness is its advisory lock, held on a connection of its own for as long as it lives.
    const holder = 1_000_000 + Math.floor(Math.random() * 1_000_000);
    const process = new pg.Client({ connectionString: server.databaseUrl });
    await process.connect();
    await process.query('SELECT pg_advisory_lock($1, $2)', [PROCESS_LOCK_NAMESPACE, holder]);
    const key = randomUUID();
    await claimedBy(holder, 'holder-died', key);
    const whileAlive = await create('holder-died', key);
    expect(whileAlive.status).toBe(409);
    expect(whileAlive.body.code).toBe('idempotency_key_in_use');
    // The process dies: its session ends, the lock with it. The key's lock would lapse in a minute.
    await process.end();
    const retry = await create('holder-died', key);
    expect(retry.status, retry.text).toBe(201);
    expect(await tokensNamed('holder-died')).toBe(1);
    const replay = await create('holder-died', key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.token.id).toBe(retry.body.token.id);
  });

  test('a request whose key was taken over (its process wrongly taken for dead) cannot complete it: its change is rolled back', async () => {
    const key = randomUUID();
    // The first request's change waits on a lock the test holds, its key claimed meanwhile.
    const blocker = new pg.Client({ connectionString: server.databaseUrl });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE api_tokens IN SHARE ROW EXCLUSIVE MODE');
    const first = create('taken-over', key);
    for (let waited = 0; ; waited += 20) {
      const { rowCount } = await server.pool.query('SELECT 1 FROM idempotency_keys WHERE org_id = $1 AND key = $2', [
        server.org.orgId,
        key,
      ]);
      if (rowCount === 1) break;
      if (waited > 10_000) throw new Error('the first request never claimed its key');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Another process takes the key over (as it would from a process it saw gone): a new claim.
    await server.pool.query('UPDATE idempotency_keys SET claim = gen_random_uuid(), holder = 1 WHERE org_id = $1 AND key = $2', [
      server.org.orgId,
      key,
    ]);
    await blocker.query('ROLLBACK');
    await blocker.end();
    const answer = await first;
    // Nothing of the first request stands: it collided, and says to retry.
    expect(answer.status, answer.text).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await tokensNamed('taken-over')).toBe(0);
    // The key is the other claim's: still in use, not released by the request that lost it.
    const { rows } = await server.pool.query('SELECT state FROM idempotency_keys WHERE org_id = $1 AND key = $2', [server.org.orgId, key]);
    expect(rows).toEqual([{ state: 'processing' }]);
  });

  test('a crashed first request does not lock its key forever: once its lock lapses, a retry runs', async () => {
    const key = randomUUID();
    // What a process that crashed mid-request leaves: the key claimed, nothing committed.
    await server.pool.query(
      "INSERT INTO idempotency_keys (org_id, key, fingerprint, state, locked_until) VALUES ($1, $2, $3, 'processing', now() - interval '1 second')",
      [server.org.orgId, key, fingerprintOf('createApiToken', { org: server.org.orgId }, { name: 'after-crash', scopes: ['read'] })],
    );
    const retry = await create('after-crash', key);
    expect(retry.status).toBe(201);
    expect(retry.body.secret).toMatch(/^cpk_/);
    expect(await tokensNamed('after-crash')).toBe(1);
  });
});
