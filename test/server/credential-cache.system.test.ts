// API keys are looked up once and then served from each process's cache: a revocation must still
// be effective at once in every process sharing the database, whichever process revoked it, and
// also when it is made in the database directly (as an operator would).
import { describe, expect, test } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { call } from '../support/server.ts';
import { answeredOnlyAfterResume, twoProcessesOnOneDatabase } from '../support/shared-database.ts';

const shared = twoProcessesOnOneDatabase('Cache Org');

const statusOf = async (url: string, key: string) => (await call(url, 'GET', `/v1/orgs/${shared.orgId}/billing`, { key })).status;

/** A new read key, already used (and so cached) in both processes. */
async function keyInUse(): Promise<{ id: string; secret: string }> {
  const created = await call(shared.first.url, 'POST', `/v1/orgs/${shared.orgId}/api-tokens`, {
    key: shared.ownerKey,
    body: { name: 'cached', scopes: ['read'] },
  });
  expect(created.status, created.text).toBe(201);
  for (let use = 0; use < 3; use++) {
    expect(await statusOf(shared.first.url, created.body.secret)).toBe(200);
    expect(await statusOf(shared.second.url, created.body.secret)).toBe(200);
  }
  return { id: created.body.token.id, secret: created.body.secret };
}

describe('the credential cache', () => {
  test('a key revoked through one process is refused by the other at once', async () => {
    for (let round = 0; round < 5; round++) {
      const key = await keyInUse();
      const revoked = await call(shared.first.url, 'DELETE', `/v1/orgs/${shared.orgId}/api-tokens/${key.id}`, { key: shared.ownerKey });
      expect(revoked.status, revoked.text).toBe(200);
      expect(await statusOf(shared.second.url, key.secret)).toBe(401);
      expect(await statusOf(shared.first.url, key.secret)).toBe(401);
    }
  });

  test('a key revoked through the other process is refused by the first at once', async () => {
    const key = await keyInUse();
    const revoked = await call(shared.second.url, 'DELETE', `/v1/orgs/${shared.orgId}/api-tokens/${key.id}`, { key: shared.ownerKey });
    expect(revoked.status, revoked.text).toBe(200);
    expect(await statusOf(shared.first.url, key.secret)).toBe(401);
    expect(await statusOf(shared.second.url, key.secret)).toBe(401);
  });

  test('a revoke answers once every process has forgotten the key: one stopped for a moment holds the answer until it resumes', async () => {
    // The database's notice reaches each process when that process gets to it; a revoke that
    // answered on its own process's notice let the other serve the key a moment longer.
    const key = await keyInUse();
    const heldUntilResumed = await answeredOnlyAfterResume(shared.second.child.pid!, 400, async () => {
      const revoked = await call(shared.first.url, 'DELETE', `/v1/orgs/${shared.orgId}/api-tokens/${key.id}`, { key: shared.ownerKey });
      expect(revoked.status, revoked.text).toBe(200);
    });
    expect(heldUntilResumed, 'the revoke answered while the other process could not have forgotten the key').toBe(true);
    expect(await statusOf(shared.second.url, key.secret)).toBe(401);
    expect(await statusOf(shared.first.url, key.secret)).toBe(401);
  });

  test('a key revoked in the database directly is refused by both processes as soon as its notice arrives', async () => {
    const key = await keyInUse();
    await shared.pool.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [key.id]);
    // Nothing here waits for the notice (an API revoke does): each process drops the key when the
    // database's notice reaches it, milliseconds after the commit; a second is far more than that.
    for (const server of [shared.first, shared.second]) {
      await eventually(async () => ((await statusOf(server.url, key.secret)) === 401 ? true : undefined), 'the key refused', 1_000);
    }
  });

  test('a cached key stops working when it expires', async () => {
    const key = await keyInUse();
    await shared.pool.query("UPDATE api_tokens SET expires_at = now() + interval '1500 milliseconds' WHERE id = $1", [key.id]);
    // Cached again, now with its expiry, which the cache must honour itself: nothing announces it.
    expect(await statusOf(shared.first.url, key.secret)).toBe(200);
    expect(await statusOf(shared.second.url, key.secret)).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    expect(await statusOf(shared.first.url, key.secret)).toBe(401);
    expect(await statusOf(shared.second.url, key.secret)).toBe(401);
  });

  test('last_used_at is still written while a cached key is used', async () => {
    const key = await keyInUse();
    // Written off the request path: soon after the first use, not before it is answered.
    const lastUsed = await eventually(async () => {
      const { rows } = await shared.pool.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_tokens WHERE id = $1', [
        key.id,
      ]);
      return rows[0]!.last_used_at ?? undefined;
    }, 'last_used_at');
    expect(Date.now() - lastUsed.getTime()).toBeLessThan(60_000);
  });
});
