// API keys are looked up once and then served from each process's cache: a revocation must still
// be effective at once in every process sharing the database, whichever process revoked it, and
// also when it is made in the database directly (as an operator would).
import { describe, expect, test } from 'vitest';
import { eventually } from '../../../support/eventually.ts';
import { call } from '../../../support/server.ts';
import { answeredOnlyAfterResume, twoProcessesOnOneDatabase } from '../../../support/shared-database.ts';

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
    // database's notice reaches it, milliseconds after the commit. Without the notice the cached
    // key would be served for good (entries live until announced or expired), so the wait is
    // bounded only to fail in time, not to time the notice on a busy machine.
    for (const server of [shared.first, shared.second]) {
      await eventually(async () => ((await statusOf(server.url, key.secret)) === 401 ? true : undefined), 'the key refused', 20_000);
    }
  });

  test('a cached key stops working when it expires', async () => {
    const key = await keyInUse();
    // Cached again, now with its expiry, which the cache must honour itself: nothing announces it.
    // Both processes must be seen serving the key before it expires: a machine too busy to ask
    // both within the window tries again with a window twice as long.
    let expiresAt: number;
    for (let windowMs = 1_500; ; windowMs *= 2) {
      expiresAt = Date.now() + windowMs;
      await shared.pool.query('UPDATE api_tokens SET expires_at = $2 WHERE id = $1', [key.id, new Date(expiresAt)]);
      const statuses = [await statusOf(shared.first.url, key.secret), await statusOf(shared.second.url, key.secret)];
      if (Date.now() < expiresAt) {
        expect(statuses).toEqual([200, 200]);
        break;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 200));
    expect(await statusOf(shared.first.url, key.secret)).toBe(401);
    expect(await statusOf(shared.second.url, key.secret)).toBe(401);
  });

  test('last_used_at is still written while a cached key is used', async () => {
    const usedFrom = Date.now();
    const key = await keyInUse();
    // Written off the request path: soon after the first use, not before it is answered.
    const lastUsed = await eventually(async () => {
      const { rows } = await shared.pool.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_tokens WHERE id = $1', [
        key.id,
      ]);
      return rows[0]!.last_used_at ?? undefined;
    }, 'last_used_at');
    // The time of its first use: not before the key was made and used, nor after it was read.
    expect(lastUsed.getTime()).toBeGreaterThanOrEqual(usedFrom);
    expect(lastUsed.getTime()).toBeLessThanOrEqual(Date.now());
  });
});
