// API keys are looked up once and then served from each process's cache: a revocation must still
// be effective at once in every process sharing the database, whichever process revoked it, and
// also when it is made in the database directly (as an operator would).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOrganization } from '../../server/auth/organizations.ts';
import { withTransaction } from '../../server/db/pool.ts';
import { eventually } from '../support/eventually.ts';
import { call, createTestDatabase, startServerProcess } from '../support/server.ts';

let databaseUrl: string;
let pool: pg.Pool;
let first: Awaited<ReturnType<typeof startServerProcess>>;
let second: Awaited<ReturnType<typeof startServerProcess>>;
let orgId: string;
let ownerKey: string;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  first = await startServerProcess(databaseUrl);
  second = await startServerProcess(databaseUrl);
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const org = await withTransaction(pool, (tx) => createOrganization(tx, { name: 'Cache Org', ownerSubject: 'cache-owner' }));
  orgId = org.orgId;
  ownerKey = org.apiKey;
}, 120_000);
afterAll(async () => {
  await first?.stop();
  await second?.stop();
  await pool?.end();
});

const statusOf = async (url: string, key: string) => (await call(url, 'GET', `/v1/orgs/${orgId}/billing`, { key })).status;

/** A new read key, already used (and so cached) in both processes. */
async function keyInUse(): Promise<{ id: string; secret: string }> {
  const created = await call(first.url, 'POST', `/v1/orgs/${orgId}/api-tokens`, {
    key: ownerKey,
    body: { name: 'cached', scopes: ['read'] },
  });
  expect(created.status, created.text).toBe(201);
  for (let use = 0; use < 3; use++) {
    expect(await statusOf(first.url, created.body.secret)).toBe(200);
    expect(await statusOf(second.url, created.body.secret)).toBe(200);
  }
  return { id: created.body.token.id, secret: created.body.secret };
}

describe('the credential cache', () => {
  test('a key revoked through one process is refused by the other at once', async () => {
    for (let round = 0; round < 5; round++) {
      const key = await keyInUse();
      const revoked = await call(first.url, 'DELETE', `/v1/orgs/${orgId}/api-tokens/${key.id}`, { key: ownerKey });
      expect(revoked.status, revoked.text).toBe(200);
      expect(await statusOf(second.url, key.secret)).toBe(401);
      expect(await statusOf(first.url, key.secret)).toBe(401);
    }
  });

  test('a key revoked through the other process is refused by the first at once', async () => {
    const key = await keyInUse();
    const revoked = await call(second.url, 'DELETE', `/v1/orgs/${orgId}/api-tokens/${key.id}`, { key: ownerKey });
    expect(revoked.status, revoked.text).toBe(200);
    expect(await statusOf(first.url, key.secret)).toBe(401);
    expect(await statusOf(second.url, key.secret)).toBe(401);
  });

  test('a revoke answers once every process has forgotten the key: one stopped for a moment holds the answer until it resumes', async () => {
    // The database's notice reaches each process when that process gets to it; a revoke that
    // answered on its own process's notice let the other serve the key a moment longer.
    const key = await keyInUse();
    const secondPid = second.child.pid!;
    process.kill(secondPid, 'SIGSTOP');
    let resumed = false;
    const resume = setTimeout(() => {
      resumed = true;
      process.kill(secondPid, 'SIGCONT');
    }, 400);
    try {
      const revoked = await call(first.url, 'DELETE', `/v1/orgs/${orgId}/api-tokens/${key.id}`, { key: ownerKey });
      expect(revoked.status, revoked.text).toBe(200);
      expect(resumed, 'the revoke answered while the other process could not have forgotten the key').toBe(true);
    } finally {
      clearTimeout(resume);
      process.kill(secondPid, 'SIGCONT');
    }
    expect(await statusOf(second.url, key.secret)).toBe(401);
    expect(await statusOf(first.url, key.secret)).toBe(401);
  });

  test('a key revoked in the database directly is refused by both processes as soon as its notice arrives', async () => {
    const key = await keyInUse();
    await pool.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [key.id]);
    // Nothing here waits for the notice (an API revoke does): each process drops the key when the
    // database's notice reaches it, milliseconds after the commit; a second is far more than that.
    for (const server of [first, second]) {
      await eventually(async () => ((await statusOf(server.url, key.secret)) === 401 ? true : undefined), 'the key refused', 1_000);
    }
  });

  test('a cached key stops working when it expires', async () => {
    const key = await keyInUse();
    await pool.query("UPDATE api_tokens SET expires_at = now() + interval '1500 milliseconds' WHERE id = $1", [key.id]);
    // Cached again, now with its expiry, which the cache must honour itself: nothing announces it.
    expect(await statusOf(first.url, key.secret)).toBe(200);
    expect(await statusOf(second.url, key.secret)).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    expect(await statusOf(first.url, key.secret)).toBe(401);
    expect(await statusOf(second.url, key.secret)).toBe(401);
  });

  test('last_used_at is still written while a cached key is used', async () => {
    const key = await keyInUse();
    // Written off the request path: soon after the first use, not before it is answered.
    const lastUsed = await eventually(async () => {
      const { rows } = await pool.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_tokens WHERE id = $1', [key.id]);
      return rows[0]!.last_used_at ?? undefined;
    }, 'last_used_at');
    expect(Date.now() - lastUsed.getTime()).toBeLessThan(60_000);
  });
});
