// Operations endpoints: list with filters and cursors, get, cancel while queued (409 once started).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  // No workers: operations stay queued until the test says otherwise.
  server = await startTestServer({ BACKGROUND_WORK: 'false' });
});
afterAll(() => server?.close());

const createBucket = async (name: string) => (await server.org.call('POST', '/s3/buckets', { body: { name } })).body;

describe('operations', () => {
  test('a queued operation is listed, read, and can be cancelled; its change is undone', async () => {
    const accepted = await createBucket('cancel-me');
    expect(accepted.operation).toMatchObject({
      type: 'bucket.create',
      resource_type: 'bucket',
      state: 'queued',
      attempt: 0,
      finished_at: null,
    });
    const read = await server.org.call('GET', `/operations/${accepted.operation.id}`);
    expect(read.body).toEqual(accepted.operation);
    const cancelled = await server.org.call('POST', `/operations/${accepted.operation.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: accepted.operation.id, state: 'cancelled' });
    expect(cancelled.body.finished_at).not.toBeNull();
    expect((await server.org.call('GET', `/s3/buckets/${accepted.bucket.id}`)).status).toBe(404);
  });

  test('an operation that has started or finished cannot be cancelled: 409 operation_not_cancellable', async () => {
    const accepted = await createBucket('too-late');
    await server.pool.query("UPDATE operations SET state = 'running', attempt = 1, started_at = now() WHERE id = $1", [
      accepted.operation.id,
    ]);
    const started = await server.org.call('POST', `/operations/${accepted.operation.id}/cancel`);
    expect(started.status).toBe(409);
    expect(started.body.code).toBe('operation_not_cancellable');
    await server.pool.query("UPDATE operations SET state = 'succeeded', finished_at = now() WHERE id = $1", [accepted.operation.id]);
    expect((await server.org.call('POST', `/operations/${accepted.operation.id}/cancel`)).body.code).toBe('operation_not_cancellable');
  });

  test('filters by resource type and state, newest first, with cursors', async () => {
    const org = await server.createOrg('Ops');
    const ids: string[] = [];
    for (const name of ['ops-a', 'ops-b', 'ops-c']) ids.push((await org.call('POST', '/s3/buckets', { body: { name } })).body.operation.id);
    await org.call('POST', `/operations/${ids[0]}/cancel`);
    const queued = (await org.call('GET', '/operations?state=queued')).body.items.map((operation: { id: string }) => operation.id);
    expect(queued).toEqual([ids[2], ids[1]]);
    expect((await org.call('GET', '/operations?state=cancelled')).body.items.map((operation: { id: string }) => operation.id)).toEqual([
      ids[0],
    ]);
    expect((await org.call('GET', '/operations?resource=vm')).body.items).toEqual([]);
    const first = await org.call('GET', '/operations?resource=bucket&limit=2');
    const second = await org.call('GET', `/operations?resource=bucket&limit=2&cursor=${first.body.next_cursor}`);
    expect([...first.body.items, ...second.body.items].map((operation: { id: string }) => operation.id)).toEqual([...ids].reverse());
    expect(second.body.next_cursor).toBeNull();
  });

  test("another organization's operation is 404", async () => {
    const accepted = await createBucket('not-yours');
    const other = await server.createOrg('Stranger');
    expect((await other.call('GET', `/operations/${accepted.operation.id}`)).status).toBe(404);
    expect((await other.call('POST', `/operations/${accepted.operation.id}/cancel`)).status).toBe(404);
  });
});
