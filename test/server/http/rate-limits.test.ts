// Rate limits: per verified credential whatever the spelling of its header, per client address
// for everything without one. Counted by each server process on its own: rate-limits.system.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startTestServer, type ApiResponse, type TestServer } from '../../support/server.ts';

function expectLimited(response: ApiResponse): void {
  expect(response.status, response.text).toBe(429);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.body.code).toBe('rate_limited');
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(response.headers.get('ratelimit-remaining')).toBe('0');
}

describe('one server process', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT: '3',
      RATE_LIMIT_ANONYMOUS: '4',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      BACKGROUND_WORK: 'false',
    });
  });
  afterAll(() => server?.close());

  test('past the limit, 429 rate_limited with Retry-After; other credentials are not affected', async () => {
    const statuses: number[] = [];
    let last: ApiResponse | undefined;
    for (let index = 0; index < 4; index++) {
      last = await server.org.call('GET', '/billing');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectLimited(last!);
    const other = await server.createOrg();
    const answer = await other.call('GET', '/billing');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('ratelimit-limit')).toBe('3');
    expect(answer.headers.get('ratelimit-remaining')).toBe('2');
  });

  test('the spelling of the Authorization header does not give a credential a fresh budget', async () => {
    const org = await server.createOrg('Spellings');
    const url = `/v1/orgs/${org.orgId}/billing`;
    const spellings = [`Bearer ${org.ownerKey}`, `bearer ${org.ownerKey}`, `BEARER   ${org.ownerKey}`, `Bearer ${org.ownerKey}  `];
    const statuses = [];
    for (const authorization of spellings)
      statuses.push((await call(server.url, 'GET', url, { headers: { Authorization: authorization } })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  test('requests without a valid credential are limited per client address, whatever key they try', async () => {
    const org = await server.createOrg('Guessed');
    const statuses = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      const junk = `cpk_${String(attempt).repeat(43).slice(0, 43)}`;
      statuses.push(
        (await call(server.url, 'GET', `/v1/orgs/${org.orgId}/billing`, { headers: { Authorization: `Bearer ${junk}` } })).status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    // Unknown routes count against the address as well.
    expectLimited(await call(server.url, 'GET', '/v1/nothing-here'));
  });
});

describe('an address over its budget', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT: '50',
      RATE_LIMIT_ANONYMOUS: '4',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      BACKGROUND_WORK: 'false',
    });
  });
  afterAll(() => server?.close());

  test('still lets through a key this process has verified, counted against the key; an unseen or revoked key is refused unread', async () => {
    const { org } = server;
    const second = (await org.call('POST', '/api-tokens', { body: { name: 'used before the guessing' } })).body;
    expect((await org.call('GET', '/billing', { key: second.secret })).status).toBe(200);
    const unseen = await server.createOrg('Never called before');

    // Someone else at the same address guesses keys until it is refused.
    const guesses = [];
    for (let attempt = 0; attempt < 5; attempt++)
      guesses.push((await call(server.url, 'GET', `/v1/orgs/${org.orgId}/billing`, { key: `cpk_${String(attempt).repeat(43)}` })).status);
    expect(guesses).toEqual([401, 401, 401, 401, 429]);

    for (const key of [org.ownerKey, second.secret]) {
      const answer = await org.call('GET', '/billing', { key });
      expect(answer.status, answer.text).toBe(200);
      // Counted against the key's own budget, which its headers show.
      expect(answer.headers.get('ratelimit-limit')).toBe('50');
    }
    expectLimited(await unseen.call('GET', '/billing'));
    // On a path that is no route, the known key passes too, and the answer still has its headers.
    const nowhere = await call(server.url, 'GET', '/v1/nothing-here', { key: org.ownerKey });
    expect(nowhere.status).toBe(404);
    for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
      expect(nowhere.headers.get(header)).toMatch(/^\d+$/);

    // A revoked key is forgotten at once: it is refused like any unknown one.
    const revoked = await org.call('DELETE', `/api-tokens/${second.token.id}`);
    expect(revoked.status, revoked.text).toBe(200);
    expectLimited(await org.call('GET', '/billing', { key: second.secret }));
    expectLimited(await call(server.url, 'GET', '/v1/nothing-here'));
  });
});

describe('a working key behind an address over its budget', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT: '50',
      RATE_LIMIT_ANONYMOUS: '4',
      RATE_LIMIT_WINDOW_SECONDS: '60',
    });
  });
  afterAll(() => server?.close());

  /** Someone at the same address guesses keys until the address is refused. */
  async function exhaustAddress(orgId: string): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const guess = await call(server.url, 'GET', `/v1/orgs/${orgId}/billing`, { key: `cpk_${String(attempt % 10).repeat(43)}` });
      if (guess.status === 429) return;
      expect(guess.status).toBe(401);
    }
    throw new Error('the address was never refused');
  }

  const expectOwnBudget = (answer: ApiResponse, what: string) => {
    expect(answer.status, `${what}: ${answer.text}`).toBe(200);
    expect(answer.headers.get('ratelimit-limit'), what).toBe('50');
  };

  test("is counted against its own budget whatever other tenants' credentials do, and after its process's cache starts over", async () => {
    const { org } = server;
    const other = await server.createOrg('Busy neighbour');
    expectOwnBudget(await org.call('GET', '/billing'), 'verified once');
    expectOwnBudget(await other.call('GET', '/billing'), "the neighbour's key, verified once");
    const revokedLater = await org.call('POST', '/api-tokens', { body: { name: 'used, then revoked' } });
    expectOwnBudget(await org.call('GET', '/billing', { key: revokedLater.body.secret }), 'a second key, verified once');
    await exhaustAddress(org.orgId);

    // Another tenant (at the same address) revokes a key of its own and has an S3 access key issued.
    const token = await other.call('POST', '/api-tokens', { body: { name: 'short-lived' } });
    expect(token.status, token.text).toBe(201);
    expect((await other.call('DELETE', `/api-tokens/${token.body.token.id}`)).status).toBe(200);
    const accessKey = await other.call('POST', '/s3/access-keys');
    expect(accessKey.status, accessKey.text).toBe(202);
    await server.waitForOperation(other, accessKey.body.operation.id);
    expectOwnBudget(await org.call('GET', '/billing'), "after another tenant's changes");

    // A key of the same organization revoked: only that key is forgotten.
    const sibling = await org.call('POST', '/api-tokens', { body: { name: 'sibling' } });
    expect((await org.call('DELETE', `/api-tokens/${sibling.body.token.id}`)).status).toBe(200);
    expectOwnBudget(await org.call('GET', '/billing'), 'after a sibling key was revoked');

    // The process's listener loses its connection: the cache starts over once it is back (it may
    // have missed announcements), and meanwhile serves nothing; the key is still not anonymous.
    const { rows } = await server.pool.query<{ stopped: boolean }>(
      `SELECT pg_terminate_backend(pid) AS stopped FROM pg_stat_activity
       WHERE application_name = 'cloud-platform-listener' AND datname = current_database()`,
    );
    expect(rows.map((row) => row.stopped)).toEqual([true]);
    expectOwnBudget(await org.call('GET', '/billing'), 'while the listener reconnects');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expectOwnBudget(await org.call('GET', '/billing'), 'once the listener is back');

    // Guessed keys are still refused unread, and a revoked key is no longer counted as verified.
    expectLimited(await call(server.url, 'GET', `/v1/orgs/${org.orgId}/billing`, { key: `cpk_${'9'.repeat(43)}` }));
    expectOwnBudget(await org.call('GET', '/billing', { key: revokedLater.body.secret }), 'the second key, still verified');
    expect((await org.call('DELETE', `/api-tokens/${revokedLater.body.token.id}`)).status).toBe(200);
    expectLimited(await org.call('GET', '/billing', { key: revokedLater.body.secret }));
  });
});
