// Buckets on the real server: creation and observed values, name rules and uniqueness, listing,
// soft delete (empty buckets only, versions and delete markers included), restore, purge, and
// isolation between organizations.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ObjectStoreSimulator } from '../../../../server/drivers/simulators/object-store.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { activeBucket, eventually, objectStoreOf, softDeleted } from './support.ts';

let server: TestServer;
let org: TestOrg;
let store: ObjectStoreSimulator;

beforeAll(async () => {
  server = await startTestServer();
  org = server.org;
  store = objectStoreOf(server);
});
afterAll(() => server?.close());

describe('createBucket', () => {
  test('accepts the bucket as creating, with nothing observed until the operation has run', async () => {
    const created = await org.call('POST', '/s3/buckets', { body: { name: 'acme-backups', versioning: true } });
    expect(created.status, created.text).toBe(202);
    const { bucket, operation } = created.body;
    expect(bucket).toMatchObject({
      name: 'acme-backups',
      state: 'creating',
      versioning: true,
      quota: { max_objects: null, max_size_bytes: null },
      observed_versioning: null,
      observed_exists: null,
      observed_quota: null,
      observed_at: null,
      operation_id: operation.id,
      soft_deleted_at: null,
      purge_after: null,
    });
    expect(operation).toMatchObject({
      type: 'bucket.create',
      resource_type: 'bucket',
      resource_id: bucket.id,
      state: 'queued',
      attempt: 0,
      finished_at: null,
    });

    const finished = await server.waitForOperation(org, operation.id);
    expect(finished.state).toBe('succeeded');
    const read = await org.call('GET', `/s3/buckets/${bucket.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      state: 'active',
      versioning: true,
      observed_versioning: true,
      observed_exists: true,
      observed_quota: { max_objects: null, max_size_bytes: null },
    });
    expect(Date.parse(read.body.observed_at)).not.toBeNaN();
  });

  test('versioning defaults to false, and false is observed as false (not null)', async () => {
    const bucket = await activeBucket(server, org, 'plain-bucket-default');
    expect(bucket.versioning).toBe(false);
    expect(bucket.observed_versioning).toBe(false);
  });

  test.each([
    ['ab', 'too short'],
    ['a'.repeat(64), 'too long'],
    ['Acme-backups', 'uppercase'],
    ['acme.backups', 'a dot'],
    ['-acme', 'a leading hyphen'],
    ['acme-', 'a trailing hyphen'],
    ['acme_backups', 'an underscore'],
    ['acme backups', 'a space'],
  ])('refuses the name %j (%s) with 400 validation_failed', async (name) => {
    const response = await org.call('POST', '/s3/buckets', { body: { name } });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_failed');
    expect(response.body.errors.map((error: { pointer: string }) => error.pointer)).toContain('/name');
  });

  test('accepts names of 3 and 63 characters, digits and inner hyphens', async () => {
    for (const name of ['a1b', `x${'-9'.repeat(30)}z1`.slice(0, 63), '0-0']) {
      const response = await org.call('POST', '/s3/buckets', { body: { name } });
      expect(response.status, `${name}: ${response.text}`).toBe(202);
    }
  });

  test('refuses unknown fields and a non-boolean versioning', async () => {
    const unknown = await org.call('POST', '/s3/buckets', { body: { name: 'fine-name', region: 'eu-1' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].pointer).toBe('/region');
    const versioning = await org.call('POST', '/s3/buckets', { body: { name: 'fine-name', versioning: 'yes' } });
    expect(versioning.status).toBe(400);
  });

  test('a name is unique within the organization, and free in another one', async () => {
    await activeBucket(server, org, 'shared-name');
    const again = await org.call('POST', '/s3/buckets', { body: { name: 'shared-name' } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('bucket_name_taken');
    const other = await server.createOrg('Unique Names Inc');
    const elsewhere = await other.call('POST', '/s3/buckets', { body: { name: 'shared-name' } });
    expect(elsewhere.status).toBe(202);
  });

  test('a retry with the same Idempotency-Key replays the first response', async () => {
    const headers = { 'Idempotency-Key': 'bucket-create-once' };
    const first = await org.call('POST', '/s3/buckets', { body: { name: 'idempotent-bucket' }, headers });
    const second = await org.call('POST', '/s3/buckets', { body: { name: 'idempotent-bucket' }, headers });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.bucket.id).toBe(first.body.bucket.id);
  });

  test('a read-only key may list but not create', async () => {
    const reader = await org.memberKey('member', ['read']);
    expect((await org.call('GET', '/s3/buckets', { key: reader })).status).toBe(200);
    const refused = await org.call('POST', '/s3/buckets', { body: { name: 'reader-bucket' }, key: reader });
    expect(refused.status).toBe(403);
  });
});

describe('listBuckets', () => {
  test('lists oldest first, soft-deleted buckets included, in pages', async () => {
    const lister = await server.createOrg('Lister GmbH');
    const first = await activeBucket(server, lister, 'list-one');
    const second = await activeBucket(server, lister, 'list-two');
    await softDeleted(server, lister, first.id);

    const all = await lister.call('GET', '/s3/buckets');
    expect(all.body.items.map((bucket: { name: string }) => bucket.name)).toEqual(['list-one', 'list-two']);
    expect(all.body.items[0].state).toBe('soft_deleted');
    expect(all.body.next_cursor).toBeNull();

    const page1 = await lister.call('GET', '/s3/buckets?limit=1');
    expect(page1.body.items.map((bucket: { id: string }) => bucket.id)).toEqual([first.id]);
    const page2 = await lister.call('GET', `/s3/buckets?limit=1&cursor=${page1.body.next_cursor}`);
    expect(page2.body.items.map((bucket: { id: string }) => bucket.id)).toEqual([second.id]);
    expect(page2.body.next_cursor).toBeNull();

    const context = await lister.call('GET', '');
    expect(context.body.quota.buckets_used).toBe(1);

    const bad = await lister.call('GET', '/s3/buckets?cursor=bm90LWEtY3Vyc29y');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_cursor');
  });
});

describe('deleteBucket', () => {
  test('soft-deletes an empty bucket: deleting, then soft_deleted with purge_after 30 days later', async () => {
    const bucket = await activeBucket(server, org, 'delete-me');
    const accepted = await org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(accepted.status, accepted.text).toBe(202);
    expect(accepted.body.bucket.state).toBe('deleting');
    expect(accepted.body.operation).toMatchObject({ type: 'bucket.delete', resource_id: bucket.id });
    await server.waitForOperation(org, accepted.body.operation.id);

    const read = (await org.call('GET', `/s3/buckets/${bucket.id}`)).body;
    expect(read.state).toBe('soft_deleted');
    expect(Date.parse(read.purge_after) - Date.parse(read.soft_deleted_at)).toBe(30 * 24 * 3_600_000);
    expect(read.observed_exists).toBe(true);

    const again = await org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('bucket_state_conflict');
  });

  test('refuses a bucket that holds objects, and accepts it once they are deleted', async () => {
    const bucket = await activeBucket(server, org, 'with-objects');
    await store.putObject({ orgId: org.orgId, bucket: 'with-objects', key: 'report.pdf', sizeBytes: 1000 });
    const refused = await org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('bucket_not_empty');
    expect((await org.call('GET', `/s3/buckets/${bucket.id}`)).body.state).toBe('active');

    await store.deleteObject({ orgId: org.orgId, bucket: 'with-objects', key: 'report.pdf' });
    expect((await org.call('DELETE', `/s3/buckets/${bucket.id}`)).status).toBe(202);
  });

  test('a versioned bucket is not emptied by deleting its objects: versions and delete markers count', async () => {
    const bucket = await activeBucket(server, org, 'versioned-keeps', true);
    const location = { orgId: org.orgId, bucket: 'versioned-keeps', key: 'data.csv' };
    const v1 = await store.putObject({ ...location, sizeBytes: 10 });
    const v2 = await store.putObject({ ...location, sizeBytes: 20 });
    const marker = await store.deleteObject(location);
    expect(marker.deleteMarker).toBe(true);
    expect(await store.listObjectVersions(location)).toHaveLength(3);

    // The object is deleted, but its two versions and the delete marker remain.
    expect((await org.call('DELETE', `/s3/buckets/${bucket.id}`)).body.code).toBe('bucket_not_empty');
    await store.deleteObject({ ...location, versionId: v1.versionId });
    await store.deleteObject({ ...location, versionId: v2.versionId });
    // Only a delete marker is left: still not empty.
    const onlyMarker = await org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(onlyMarker.status).toBe(409);
    expect(onlyMarker.body.code).toBe('bucket_not_empty');
    await store.deleteObject({ ...location, versionId: marker.versionId });
    expect((await org.call('DELETE', `/s3/buckets/${bucket.id}`)).status).toBe(202);
  });

  test('a soft-deleted bucket keeps its name until purged, holds no slot, and is purged after purge_after', async () => {
    const owner = await server.createOrg('Purge Ltd');
    const bucket = await activeBucket(server, owner, 'keeps-name');
    await softDeleted(server, owner, bucket.id);
    expect((await owner.call('GET', '')).body.quota.buckets_used).toBe(0);

    const taken = await owner.call('POST', '/s3/buckets', { body: { name: 'keeps-name' } });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('bucket_name_taken');
    expect(taken.body.detail).toContain('soft-deleted');

    // Thirty days pass.
    await server.pool.query(
      `UPDATE buckets SET soft_deleted_at = now() - interval '31 days', purge_after = now() - interval '1 day' WHERE id = $1`,
      [bucket.id],
    );
    await eventually(
      async () => ((await owner.call('POST', '/s3/buckets', { body: { name: 'keeps-name' } })).status === 202 ? true : undefined),
      'the purge to free the name',
    );
    expect((await owner.call('GET', `/s3/buckets/${bucket.id}`)).status).toBe(404);
    expect((await owner.call('POST', `/s3/buckets/${bucket.id}/restore`)).status).toBe(404);
    const listed = (await owner.call('GET', '/s3/buckets')).body.items;
    expect(listed.map((item: { id: string }) => item.id)).not.toContain(bucket.id);
    const audit = await owner.call('GET', `/audit-events?resource_id=${bucket.id}&action=bucket.purge`);
    expect(audit.body.items).toHaveLength(1);
    expect(audit.body.items[0].actor_realm).toBe('system');
  });
});

describe('restoreBucket', () => {
  test('restores a soft-deleted bucket with its name, versioning and quota', async () => {
    const bucket = await activeBucket(server, org, 'come-back', true);
    const quota = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_objects: 100 } });
    await server.waitForOperation(org, quota.body.operation.id);
    await softDeleted(server, org, bucket.id);

    const restored = await org.call('POST', `/s3/buckets/${bucket.id}/restore`);
    expect(restored.status, restored.text).toBe(202);
    expect(restored.body.bucket).toMatchObject({ state: 'creating', soft_deleted_at: null, purge_after: null });
    expect(restored.body.operation).toMatchObject({ type: 'bucket.restore', resource_id: bucket.id });
    await server.waitForOperation(org, restored.body.operation.id);
    expect((await org.call('GET', `/s3/buckets/${bucket.id}`)).body).toMatchObject({
      state: 'active',
      name: 'come-back',
      versioning: true,
      observed_versioning: true,
      quota: { max_objects: 100, max_size_bytes: null },
      observed_quota: { max_objects: 100, max_size_bytes: null },
    });
    // Served again: objects can be written.
    await store.putObject({ orgId: org.orgId, bucket: 'come-back', key: 'again', sizeBytes: 1 });
  });

  test('only a soft-deleted bucket can be restored', async () => {
    const bucket = await activeBucket(server, org, 'not-deleted');
    const response = await org.call('POST', `/s3/buckets/${bucket.id}/restore`);
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('bucket_state_conflict');
  });
});

describe('another organization', () => {
  test("gets 404 for this organization's buckets, and never sees them listed", async () => {
    const bucket = await activeBucket(server, org, 'private-bucket');
    const other = await server.createOrg('Curious Corp');
    for (const [method, path, body] of [
      ['GET', `/s3/buckets/${bucket.id}`, undefined],
      ['DELETE', `/s3/buckets/${bucket.id}`, undefined],
      ['PUT', `/s3/buckets/${bucket.id}/quota`, { max_objects: 1 }],
      ['POST', `/s3/buckets/${bucket.id}/restore`, undefined],
    ] as const) {
      const response = await other.call(method, path, { body });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.code).toBe('not_found');
    }
    expect((await other.call('GET', '/s3/buckets')).body.items).toEqual([]);
    // Its own key on this organization's path is refused outright.
    expect((await org.call('GET', `/s3/buckets/${bucket.id}`, { key: other.ownerKey })).status).toBe(403);
  });

  test('an unknown bucket id is 404', async () => {
    const response = await org.call('GET', '/s3/buckets/6e8a0c2e-4b6d-4f8a-9c0e-2b4d6f8a0c39');
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('not_found');
  });
});
