// Audit events: every write, allowed or denied, leaves one with actor, before/after and request
// id; listed newest first with filters and cursors; never another organization's.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';

let server: TestServer;
let org: TestOrg;
beforeAll(async () => {
  server = await startTestServer();
  org = await server.createOrg('Audited');
});
afterAll(() => server?.close());

const events = async (query = '') => (await org.call('GET', `/audit-events${query}`)).body.items;

describe('audit events', () => {
  test('a successful write: actor, before and after, request id; never the secret', async () => {
    const created = await org.call('POST', '/api-tokens', { body: { name: 'audited-key' }, headers: { 'X-Request-Id': 'audit-req-1' } });
    const [event] = await events('?action=api_token.create&limit=1');
    expect(event).toMatchObject({
      action: 'api_token.create',
      resource_type: 'api_token',
      resource_id: created.body.token.id,
      result: 'succeeded',
      actor_realm: 'api_key',
      request_id: 'audit-req-1',
      before: null,
      reason: null,
    });
    expect(event.after).toMatchObject({ name: 'audited-key' });
    expect(JSON.stringify(event)).not.toContain(created.body.secret);
    const owner = await server.pool.query('SELECT subject FROM members WHERE id = $1', [org.ownerMemberId]);
    expect(event.actor_sub).toBe(owner.rows[0].subject);
    const tokenId = await server.pool.query('SELECT id FROM api_tokens WHERE member_id = $1 AND name = $2', [
      org.ownerMemberId,
      'owner key',
    ]);
    expect(event.actor_token_id).toBe(tokenId.rows[0].id);
  });

  test('a denied write is recorded as denied, with the reason', async () => {
    const readKey = await org.memberKey('member', ['read']);
    await org.call('PUT', '/billing', { key: readKey, body: { spend_budget_cents: 10 }, headers: { 'X-Request-Id': 'audit-denied' } });
    const [event] = await events('?action=billing.set_budget&limit=1');
    expect(event).toMatchObject({ result: 'denied', request_id: 'audit-denied', after: null });
    expect(event.reason).toMatch(/^forbidden: /);
  });

  test('a denied write on a path that names no resource is recorded, and the list still reads', async () => {
    const readKey = await org.memberKey('member', ['read']);
    for (const segment of ['a%00b', 'x'.repeat(300)]) {
      const response = await org.call('DELETE', `/compute/vms/${segment}`, { key: readKey, headers: { 'X-Request-Id': 'audit-odd-path' } });
      expect(response.status, response.text).toBe(403);
      const [event] = await events('?action=vm.delete&limit=1');
      expect(event).toMatchObject({ result: 'denied', request_id: 'audit-odd-path', resource_id: null });
    }
    expect((await org.call('GET', '/audit-events?limit=200')).status).toBe(200);
  });

  test('a refused write is recorded as failed, with the problem code', async () => {
    await org.call('PUT', '/billing', { body: { spend_budget_cents: 0 }, headers: { 'X-Request-Id': 'audit-failed' } });
    const [event] = await events('?action=billing.set_budget&limit=1');
    expect(event).toMatchObject({ result: 'failed', request_id: 'audit-failed' });
    expect(event.reason).toMatch(/^validation_failed: /);
  });

  test('reads leave no event; unauthenticated requests leave none', async () => {
    const before = (await events('?limit=200')).length;
    await org.call('GET', '/billing');
    await org.call('PUT', '/billing', { key: null, body: { spend_budget_cents: 3 } });
    expect((await events('?limit=200')).length).toBe(before);
  });

  test('newest first, with filters and stable cursors', async () => {
    const fresh = await server.createOrg('Filtered');
    for (const cents of [101, 102, 103]) await fresh.call('PUT', '/billing', { body: { spend_budget_cents: cents } });
    await fresh.call('POST', '/api-tokens', { body: { name: 'x' } });
    const budgets = (await fresh.call('GET', '/audit-events?resource_type=billing')).body.items;
    expect(budgets.map((event: { after: { spend_budget_cents: number } }) => event.after.spend_budget_cents)).toEqual([103, 102, 101]);
    const page1 = await fresh.call('GET', '/audit-events?limit=2');
    const page2 = await fresh.call('GET', `/audit-events?limit=2&cursor=${page1.body.next_cursor}`);
    const all = (await fresh.call('GET', '/audit-events')).body.items.map((event: { id: string }) => event.id);
    expect([...page1.body.items, ...page2.body.items].map((event: { id: string }) => event.id)).toEqual(all.slice(0, 4));
    const since = budgets[1].ts;
    const window = (
      await fresh.call(
        'GET',
        `/audit-events?resource_type=billing&since=${encodeURIComponent(since)}&until=${encodeURIComponent(budgets[0].ts)}`,
      )
    ).body.items;
    expect(window.map((event: { id: string }) => event.id)).toEqual([budgets[1].id]);
    const byResource = (await fresh.call('GET', `/audit-events?resource_id=${fresh.orgId}`)).body.items;
    expect(byResource).toHaveLength(3);
  });

  test('time bounds take every RFC 3339 year, 0000 included (1 BC, which PostgreSQL spells with BC)', async () => {
    const fresh = await server.createOrg('Bounded');
    await fresh.call('PUT', '/billing', { body: { spend_budget_cents: 104 } });
    const ids = async (query: string) => {
      const response = await fresh.call('GET', `/audit-events?${query}`);
      expect(response.status, response.text).toBe(200);
      return response.body.items.map((event: { id: string }) => event.id);
    };
    const all = await ids('');
    expect(all).toHaveLength(1);
    for (const bound of ['0000-01-01T00:00:00Z', '0000-12-31T23:59:59.999999Z', '0000-06-15T12:00:00+14:00', '0000-01-01T00:00:00-12:00']) {
      expect(await ids(`since=${encodeURIComponent(bound)}`), bound).toEqual(all);
      expect(await ids(`until=${encodeURIComponent(bound)}`), bound).toEqual([]);
    }
    // Far apart, as the stored instants are: the last instant of 1 BC, the first of 1 AD.
    expect(await ids(`since=${encodeURIComponent('0000-12-31T23:59:59Z')}&until=${encodeURIComponent('0001-01-01T00:00:01Z')}`)).toEqual(
      [],
    );
  });

  test("one organization never sees another's events", async () => {
    const other = await server.createOrg('Nosy');
    const theirs = (await other.call('GET', '/audit-events?limit=200')).body.items;
    const ours = new Set((await events('?limit=200')).map((event: { id: string }) => event.id));
    expect(theirs.some((event: { id: string }) => ours.has(event.id))).toBe(false);
  });
});
