// Object-store failures on the real server, injected with SIM_FAULTS: a transient fault is
// retried to success, a permanent one (or one that outlasts every attempt) ends the operation
// failed with a fixed phrase and leaves the resource where a user can act on it. And operations
// cancelled before they ran undo what their request did.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ObjectStoreSimulator } from '../../../../server/drivers/simulators/object-store.ts';
import { startTestServer, type TestServer } from '../../../support/server.ts';
import { activeBucket, eventually, objectStoreOf } from './support.ts';

const SIM_FAULTS = [
  'objectstore.createBucket@flaky-*=transient*2',
  'objectstore.createBucket@doomed-*=permanent',
  'objectstore.createBucket@weary-*=transient',
  'objectstore.setBucketQuota@quota-doomed=permanent',
  'objectstore.createBucket@fickle-*=permanent*1',
  'objectstore.suspendBucket@stuck-*=permanent',
  'objectstore.describeBucket@blind-*=transient',
  'objectstore.createAccessKey=transient*3',
  'objectstore.revokeAccessKey=permanent',
].join(';');

let server: TestServer;
let store: ObjectStoreSimulator;

beforeAll(async () => {
  server = await startTestServer({ SIM_FAULTS, OPERATION_MAX_ATTEMPTS: '4' });
  store = objectStoreOf(server);
});
afterAll(() => server?.close());

describe('buckets', () => {
  test('a transient fault is retried until the operation succeeds', async () => {
    const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'flaky-one', versioning: true } });
    const operation = await server.waitForOperation(server.org, created.body.operation.id);
    expect(operation).toMatchObject({ state: 'succeeded', attempt: 3, max_attempts: 4, error_class: null, error_detail: null });
    expect((await server.org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).body).toMatchObject({
      state: 'active',
      observed_versioning: true,
    });
  });

  test('a permanent fault fails the operation with a fixed phrase and leaves the bucket in error, which can be deleted', async () => {
    const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'doomed-one', versioning: true } });
    const operation = await server.waitForOperation(server.org, created.body.operation.id);
    expect(operation).toMatchObject({
      state: 'failed',
      attempt: 1,
      error_class: 'backend_rejected',
      error_detail: 'The object store refused the request. [bucket.create]',
    });
    const bucket = (await server.org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).body;
    expect(bucket).toMatchObject({ state: 'error', observed_versioning: null });
    // The store never held it: deleting removes the record, and its name and slot are free.
    const deleted = await server.org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(deleted.status, deleted.text).toBe(202);
    expect(await server.waitForOperation(server.org, deleted.body.operation.id)).toMatchObject({ state: 'succeeded' });
    expect((await server.org.call('GET', `/s3/buckets/${bucket.id}`)).status).toBe(404);
    expect(await store.describeBucket({ orgId: server.org.orgId, bucketId: bucket.id, name: bucket.name })).toBeNull();
    const reused = await server.org.call('POST', '/s3/buckets', { body: { name: 'doomed-one' } });
    expect(reused.status, reused.text).toBe(202);
  });

  test('a bucket whose creation failed is created after all by a quota change', async () => {
    const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'fickle-one', versioning: true } });
    expect(await server.waitForOperation(server.org, created.body.operation.id)).toMatchObject({ state: 'failed' });
    const accepted = await server.org.call('PUT', `/s3/buckets/${created.body.bucket.id}/quota`, { body: { max_objects: 5 } });
    expect(accepted.status, accepted.text).toBe(202);
    expect(await server.waitForOperation(server.org, accepted.body.operation.id)).toMatchObject({ state: 'succeeded' });
    expect((await server.org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).body).toMatchObject({
      state: 'active',
      observed_exists: true,
      observed_versioning: true,
      observed_quota: { max_objects: 5, max_size_bytes: null },
    });
  });

  test('a delete the store refuses leaves the bucket active, still held by the store', async () => {
    const bucket = await activeBucket(server, server.org, 'stuck-one');
    const deleted = await server.org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(await server.waitForOperation(server.org, deleted.body.operation.id)).toMatchObject({
      state: 'failed',
      error_class: 'backend_rejected',
    });
    expect((await server.org.call('GET', `/s3/buckets/${bucket.id}`)).body).toMatchObject({ state: 'active', soft_deleted_at: null });
    expect(await store.describeBucket({ orgId: server.org.orgId, bucketId: bucket.id, name: bucket.name })).toMatchObject({
      suspended: false,
    });
    // And it can be acted on: a quota change is accepted.
    expect((await server.org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_objects: 3 } })).status).toBe(202);
  });

  test('a transient fault that outlasts every attempt fails the operation as unavailable', async () => {
    const created = await server.org.call('POST', '/s3/buckets', { body: { name: 'weary-one' } });
    const operation = await server.waitForOperation(server.org, created.body.operation.id);
    expect(operation).toMatchObject({
      state: 'failed',
      attempt: 4,
      error_class: 'backend_unavailable',
      error_detail: 'The object store was unavailable after 4 attempts. [bucket.create]',
    });
  });

  test('a refused quota change leaves the bucket in error, the desired caps as requested', async () => {
    const bucket = await activeBucket(server, server.org, 'quota-doomed');
    const accepted = await server.org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_objects: 10 } });
    const operation = await server.waitForOperation(server.org, accepted.body.operation.id);
    expect(operation.error_detail).toBe('The object store refused the request. [bucket.quota]');
    expect((await server.org.call('GET', `/s3/buckets/${bucket.id}`)).body).toMatchObject({
      state: 'error',
      quota: { max_objects: 10 },
      observed_quota: { max_objects: null, max_size_bytes: null },
    });
  });

  test('when the store cannot be asked, the not-empty check uses the latest usage sample', async () => {
    const bucket = await activeBucket(server, server.org, 'blind-spot');
    await store.putObject({ orgId: server.org.orgId, bucket: 'blind-spot', key: 'k', sizeBytes: 5 });
    await eventually(async () => {
      const { rows } = await server.pool.query<{ usage_objects: number | null }>('SELECT usage_objects FROM buckets WHERE id = $1', [
        bucket.id,
      ]);
      return rows[0]?.usage_objects === 1 ? true : undefined;
    }, 'a usage sample of the bucket');
    const refused = await server.org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('bucket_not_empty');
  });
});

describe('access keys', () => {
  test('a key cannot be revoked while issuing; transient faults delay it, then it is active', async () => {
    const created = await server.org.call('POST', '/s3/access-keys');
    const refused = await server.org.call('DELETE', `/s3/access-keys/${created.body.access_key.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('access_key_state_conflict');
    const operation = await server.waitForOperation(server.org, created.body.operation.id);
    expect(operation).toMatchObject({ state: 'succeeded', attempt: 4 });
  });

  test('a refused revoke leaves the key active (the store still accepts it), and it can be revoked again', async () => {
    const created = await server.org.call('POST', '/s3/access-keys');
    await server.waitForOperation(server.org, created.body.operation.id);
    const revoke = await server.org.call('DELETE', `/s3/access-keys/${created.body.access_key.id}`);
    const failed = await server.waitForOperation(server.org, revoke.body.operation.id);
    expect(failed).toMatchObject({
      state: 'failed',
      error_class: 'backend_rejected',
      error_detail: 'The object store refused the request. [access_key.revoke]',
    });
    const key = (await server.org.call('GET', '/s3/access-keys')).body.items.find(
      (item: { id: string }) => item.id === created.body.access_key.id,
    );
    expect(key.state).toBe('active');
    const again = await server.org.call('DELETE', `/s3/access-keys/${key.id}`);
    expect(again.status).toBe(202);
    expect(again.body.access_key.state).toBe('revoking');
  });
});

describe('a secret store that fails during the request', () => {
  let unreachable: TestServer;
  beforeAll(async () => {
    unreachable = await startTestServer({ SIM_FAULTS: 'secretstore.put=transient' });
  });
  afterAll(() => unreachable?.close());

  test('creating an access key is 503 with Retry-After, and nothing is created', async () => {
    const response = await unreachable.org.call('POST', '/s3/access-keys', { headers: { 'Idempotency-Key': 'retry-me' } });
    expect(response.status, response.text).toBe(503);
    expect(response.body.code).toBe('service_unavailable');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await unreachable.org.call('GET', '/s3/access-keys')).body.items).toEqual([]);
    // The Idempotency-Key was released, not stored with the 503: the retry runs again.
    const retried = await unreachable.org.call('POST', '/s3/access-keys', { headers: { 'Idempotency-Key': 'retry-me' } });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('cancelled before they ran', () => {
  let idle: TestServer;
  beforeAll(async () => {
    // No workers: operations stay queued, so they can be cancelled.
    idle = await startTestServer({ WORKER_CONCURRENCY: '0' });
  });
  afterAll(() => idle?.close());

  test('a cancelled bucket creation removes the bucket, its name and its slot', async () => {
    const created = await idle.org.call('POST', '/s3/buckets', { body: { name: 'never-made' } });
    expect((await idle.org.call('GET', '')).body.quota.buckets_used).toBe(1);
    expect((await idle.org.call('POST', `/operations/${created.body.operation.id}/cancel`)).status).toBe(200);
    expect((await idle.org.call('GET', `/s3/buckets/${created.body.bucket.id}`)).status).toBe(404);
    expect((await idle.org.call('GET', '')).body.quota.buckets_used).toBe(0);
    expect((await idle.org.call('POST', '/s3/buckets', { body: { name: 'never-made' } })).status).toBe(202);
  });

  test('a cancelled key issue removes the key and destroys its secret', async () => {
    const created = await idle.org.call('POST', '/s3/access-keys');
    const path = created.body.access_key.secretstore_path;
    const idleStore = objectStoreOf(idle);
    expect(await idleStore.secrets.get(path)).toBe(created.body.secret_access_key);
    expect((await idle.org.call('POST', `/operations/${created.body.operation.id}/cancel`)).status).toBe(200);
    expect((await idle.org.call('GET', '/s3/access-keys')).body.items).toEqual([]);
    expect(await idleStore.secrets.get(path)).toBeNull();
  });
});
