// Buckets through S3: CreateBucket, DeleteBucket, Put/GetBucketVersioning and GetBucketLocation
// are the platform's own bucket lifecycle (decisions.md, wave 3): the same name rules, bucket
// slots, soft delete, audit events and operations as the API's, whichever door a client uses.
// Names are the organization's own: another organization's names are unknown to it.
import {
  type BucketLocationConstraint,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetBucketLocationCommand,
  GetBucketVersioningCommand,
  GetObjectLockConfigurationCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccessKey, s3Client, s3ErrorOf, signedRequest, startS3Server, type IssuedKey } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let key: IssuedKey;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  key = await createAccessKey(server, server.org);
  s3 = s3Client(server, key);
}, 120_000);
afterAll(async () => server?.close());

interface BucketOut {
  id: string;
  name: string;
  state: string;
  versioning: boolean;
  observed_versioning: boolean | null;
  operation_id: string | null;
}

async function apiBucket(name: string, org = server.org): Promise<BucketOut | undefined> {
  const listed = await org.call('GET', '/s3/buckets?limit=200');
  expect(listed.status, listed.text).toBe(200);
  return (listed.body.items as BucketOut[]).find((bucket) => bucket.name === name);
}

async function auditEvents(resourceId: string) {
  const events = await server.org.call('GET', `/audit-events?resource_id=${resourceId}`);
  expect(events.status, events.text).toBe(200);
  return events.body.items as Array<{
    action: string;
    result: string;
    actor_sub: string;
    actor_realm: string;
    actor_token_id: string | null;
    operation_id: string | null;
    reason: string | null;
  }>;
}

describe('CreateBucket', () => {
  test('creates the platform bucket, usable when it answers, with its audit event and operation by the access key', async () => {
    const created = await s3.send(new CreateBucketCommand({ Bucket: 'made-over-s3' }));
    expect(created.Location).toBe('/made-over-s3');
    // Usable at once: the answer waited for the bucket's operation.
    await s3.send(new PutObjectCommand({ Bucket: 'made-over-s3', Key: 'first', Body: 'at once' }));
    const bucket = await apiBucket('made-over-s3');
    expect(bucket).toMatchObject({ state: 'active', versioning: false });
    const operation = await server.org.call('GET', `/operations/${bucket!.operation_id}`);
    expect(operation.body).toMatchObject({ type: 'bucket.create', state: 'succeeded', resource_id: bucket!.id });
    const [event] = await auditEvents(bucket!.id);
    expect(event).toMatchObject({
      action: 'bucket.create',
      result: 'succeeded',
      actor_realm: 's3_access_key',
      actor_sub: key.accessKeyId,
      actor_token_id: key.keyId,
      operation_id: bucket!.operation_id,
    });
    expect((await s3.send(new ListBucketsCommand({}))).Buckets?.map((listed) => listed.Name)).toContain('made-over-s3');
  });

  test('a repeated CreateBucket of its own bucket answers 200 in us-east-1, as S3 does, and changes nothing', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'made-twice' }));
    await s3.send(new PutObjectCommand({ Bucket: 'made-twice', Key: 'kept', Body: 'still here' }));
    // What the reconciler last observed may be refreshed meanwhile (observed_at): the bucket is otherwise the same.
    const unobserved = (bucket: BucketOut | undefined) => ({ ...bucket, observed_at: undefined });
    const before = unobserved(await apiBucket('made-twice'));
    await s3.send(new CreateBucketCommand({ Bucket: 'made-twice' }));
    expect(unobserved(await apiBucket('made-twice'))).toEqual(before);
    const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: 'made-twice' }));
    expect(listed.Versions?.map((version) => version.Key)).toEqual(['kept']);
  });

  test("the contract's name rules apply: a name the API would refuse is InvalidBucketName, and nothing is made", async () => {
    for (const name of ['Upper-Case', 'has.dots', 'under_score', '-leading', 'ab']) {
      const answer = await signedRequest(server, key, { method: 'PUT', path: `/${name}` });
      expect([answer.status, answer.code], `${name}: ${answer.text}`).toEqual([400, 'InvalidBucketName']);
    }
    const listed = await server.org.call('GET', '/s3/buckets?limit=200');
    expect((listed.body.items as BucketOut[]).map((bucket) => bucket.name)).not.toContain('ab');
  });

  test("the organization's bucket slots apply: past max_buckets, TooManyBuckets and a failed audit event", async () => {
    const org = await server.createOrg('Few Slots');
    await server.pool.query('UPDATE orgs SET max_buckets_override = 1 WHERE id = $1', [org.orgId]);
    const client = s3Client(server, await createAccessKey(server, org));
    await client.send(new CreateBucketCommand({ Bucket: 'the-only-one' }));
    expect(await s3ErrorOf(client.send(new CreateBucketCommand({ Bucket: 'one-too-many' })))).toEqual({
      code: 'TooManyBuckets',
      status: 400,
    });
    const events = await org.call('GET', '/audit-events?action=bucket.create');
    expect(events.body.items.map((event: { result: string }) => event.result).sort()).toEqual(['failed', 'succeeded']);
    expect(events.body.items.find((event: { result: string }) => event.result === 'failed').reason).toMatch(/^bucket_limit_reached/);
  });

  test("a LocationConstraint other than this endpoint's region is refused; its own region is accepted", async () => {
    expect(
      await s3ErrorOf(
        s3.send(new CreateBucketCommand({ Bucket: 'far-away', CreateBucketConfiguration: { LocationConstraint: 'eu-west-3' } })),
      ),
    ).toEqual({ code: 'InvalidLocationConstraint', status: 400 });
    expect(await apiBucket('far-away')).toBeUndefined();
    const location = await s3.send(new GetBucketLocationCommand({ Bucket: 'made-over-s3' }));
    // us-east-1 is S3's empty constraint; a bucket created naming it gets it back, as RGW answers.
    expect(location.LocationConstraint ?? '').toBe('');
    await s3.send(
      new CreateBucketCommand({
        Bucket: 'named-region',
        CreateBucketConfiguration: { LocationConstraint: 'us-east-1' as BucketLocationConstraint },
      }),
    );
    expect((await s3.send(new GetBucketLocationCommand({ Bucket: 'named-region' }))).LocationConstraint).toBe('us-east-1');
  });

  test('a bucket asked with object lock is made versioned and locked; its versioning cannot then be suspended', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'locked-up', ObjectLockEnabledForBucket: true }));
    expect(await apiBucket('locked-up')).toMatchObject({ state: 'active', versioning: true });
    const lock = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: 'locked-up' }));
    expect(lock.ObjectLockConfiguration?.ObjectLockEnabled).toBe('Enabled');
    expect(
      await s3ErrorOf(s3.send(new PutBucketVersioningCommand({ Bucket: 'locked-up', VersioningConfiguration: { Status: 'Suspended' } }))),
    ).toEqual({ code: 'InvalidBucketState', status: 409 });
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: 'locked-up' }))).Status).toBe('Enabled');
    // Asked again with object lock, a bucket made without it is not answered as if it had it.
    expect(await s3ErrorOf(s3.send(new CreateBucketCommand({ Bucket: 'made-over-s3', ObjectLockEnabledForBucket: true })))).toEqual({
      code: 'BucketAlreadyOwnedByYou',
      status: 409,
    });
  });
});

describe('names per organization', () => {
  test('another organization may hold the same name; neither learns of the other, and each sees its own', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'shared-name' }));
    await s3.send(new PutObjectCommand({ Bucket: 'shared-name', Key: 'mine', Body: 'first organization' }));
    const other = await server.createOrg('Second Tenant');
    const theirs = s3Client(server, await createAccessKey(server, other));
    // Unknown to them before they make it, as any name nobody made.
    expect(await s3ErrorOf(theirs.send(new HeadBucketCommand({ Bucket: 'shared-name' })))).toMatchObject({ status: 404 });
    await theirs.send(new CreateBucketCommand({ Bucket: 'shared-name' }));
    const listed = await theirs.send(new ListObjectVersionsCommand({ Bucket: 'shared-name' }));
    expect(listed.Versions ?? []).toEqual([]);
    expect((await apiBucket('shared-name', other))?.state).toBe('active');
    expect((await s3.send(new ListObjectVersionsCommand({ Bucket: 'shared-name' }))).Versions?.map((version) => version.Key)).toEqual([
      'mine',
    ]);
  });
});

describe('ListBuckets', () => {
  test('pages in name order with max-buckets and a continuation token, and takes a prefix', async () => {
    const org = await server.createOrg('Pager');
    const client = s3Client(server, await createAccessKey(server, org));
    for (const Bucket of ['page-c', 'page-a', 'page-b', 'other']) await client.send(new CreateBucketCommand({ Bucket }));
    const first = await client.send(new ListBucketsCommand({ MaxBuckets: 2 }));
    expect(first.Buckets?.map((bucket) => bucket.Name)).toEqual(['other', 'page-a']);
    const rest = await client.send(new ListBucketsCommand({ MaxBuckets: 2, ContinuationToken: first.ContinuationToken }));
    expect([rest.Buckets?.map((bucket) => bucket.Name), rest.ContinuationToken]).toEqual([['page-b', 'page-c'], undefined]);
    const prefixed = await client.send(new ListBucketsCommand({ Prefix: 'page-' }));
    expect(prefixed.Buckets?.map((bucket) => bucket.Name)).toEqual(['page-a', 'page-b', 'page-c']);
  });
});

describe('DeleteBucket', () => {
  test('soft-deletes through the platform: refused while not empty, then soft_deleted with its audit event', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'to-be-deleted' }));
    await s3.send(new PutObjectCommand({ Bucket: 'to-be-deleted', Key: 'blocker', Body: 'x' }));
    expect(await s3ErrorOf(s3.send(new DeleteBucketCommand({ Bucket: 'to-be-deleted' })))).toEqual({ code: 'BucketNotEmpty', status: 409 });
    expect((await apiBucket('to-be-deleted'))?.state).toBe('active');
    await s3.send(new DeleteObjectCommand({ Bucket: 'to-be-deleted', Key: 'blocker' }));
    await s3.send(new DeleteBucketCommand({ Bucket: 'to-be-deleted' }));
    // Answered once done: the platform shows it soft-deleted (restorable, its name kept), S3 no longer serves it.
    const bucket = await apiBucket('to-be-deleted');
    expect(bucket?.state).toBe('soft_deleted');
    expect(await s3ErrorOf(s3.send(new HeadBucketCommand({ Bucket: 'to-be-deleted' })))).toMatchObject({ status: 404 });
    expect((await s3.send(new ListBucketsCommand({}))).Buckets?.map((listed) => listed.Name)).not.toContain('to-be-deleted');
    const events = await auditEvents(bucket!.id);
    expect(events.map((event) => [event.action, event.result, event.actor_realm])).toEqual([
      ['bucket.delete', 'succeeded', 's3_access_key'],
      ['bucket.delete', 'failed', 's3_access_key'],
      ['bucket.create', 'succeeded', 's3_access_key'],
    ]);
    // The name stays the soft-deleted bucket's until it is purged: S3 says so rather than making another.
    expect(await s3ErrorOf(s3.send(new CreateBucketCommand({ Bucket: 'to-be-deleted' })))).toEqual({
      code: 'OperationAborted',
      status: 409,
    });
    const restored = await server.org.call('POST', `/s3/buckets/${bucket!.id}/restore`);
    expect(restored.status, restored.text).toBe(202);
    await server.waitForOperation(server.org, restored.body.operation.id);
    await s3.send(new HeadBucketCommand({ Bucket: 'to-be-deleted' }));
  });

  test('a bucket the API deleted, or one never made, is NoSuchBucket', async () => {
    expect(await s3ErrorOf(s3.send(new DeleteBucketCommand({ Bucket: 'never-made' })))).toEqual({ code: 'NoSuchBucket', status: 404 });
  });

  test('a deleted bucket frees its slot: a full organization creates again once it deleted one', async () => {
    const org = await server.createOrg('One Slot');
    await server.pool.query('UPDATE orgs SET max_buckets_override = 1 WHERE id = $1', [org.orgId]);
    const client = s3Client(server, await createAccessKey(server, org));
    for (const name of ['slot-user-1', 'slot-user-2', 'slot-user-3']) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      await client.send(new DeleteBucketCommand({ Bucket: name }));
    }
  });
});

describe('versioning', () => {
  test('PutBucketVersioning turns versioning on and suspends it, in the store and in the platform, with audit events', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'versions-over-s3' }));
    const status = async () => (await s3.send(new GetBucketVersioningCommand({ Bucket: 'versions-over-s3' }))).Status;
    expect(await status()).toBeUndefined();
    await s3.send(new PutBucketVersioningCommand({ Bucket: 'versions-over-s3', VersioningConfiguration: { Status: 'Enabled' } }));
    expect(await status()).toBe('Enabled');
    expect(await apiBucket('versions-over-s3')).toMatchObject({ versioning: true, observed_versioning: true });
    const first = await s3.send(new PutObjectCommand({ Bucket: 'versions-over-s3', Key: 'doc', Body: 'one' }));
    const second = await s3.send(new PutObjectCommand({ Bucket: 'versions-over-s3', Key: 'doc', Body: 'two' }));
    expect(first.VersionId).not.toBe(second.VersionId);

    await s3.send(new PutBucketVersioningCommand({ Bucket: 'versions-over-s3', VersioningConfiguration: { Status: 'Suspended' } }));
    expect(await status()).toBe('Suspended');
    expect(await apiBucket('versions-over-s3')).toMatchObject({ versioning: false, observed_versioning: false });
    // Suspended: a write makes the `null` version, twice replaced in place; the versions kept stay.
    const third = await s3.send(new PutObjectCommand({ Bucket: 'versions-over-s3', Key: 'doc', Body: 'three' }));
    await s3.send(new PutObjectCommand({ Bucket: 'versions-over-s3', Key: 'doc', Body: 'four' }));
    // A suspended bucket's writes name no version (their version is `null`), as S3's.
    expect(third.VersionId).toBeUndefined();
    const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: 'versions-over-s3' }));
    expect(listed.Versions?.map((version) => version.VersionId)).toEqual(['null', second.VersionId, first.VersionId]);
    // A delete without a version id replaces the null version with a null delete marker.
    const deleted = await s3.send(new DeleteObjectCommand({ Bucket: 'versions-over-s3', Key: 'doc' }));
    expect([deleted.DeleteMarker, deleted.VersionId]).toEqual([true, 'null']);
    const after = await s3.send(new ListObjectVersionsCommand({ Bucket: 'versions-over-s3' }));
    expect(after.Versions?.map((version) => version.VersionId)).toEqual([second.VersionId, first.VersionId]);
    expect(after.DeleteMarkers?.map((marker) => marker.VersionId)).toEqual(['null']);

    const bucket = await apiBucket('versions-over-s3');
    const actions = (await auditEvents(bucket!.id)).map((event) => [event.action, event.actor_realm]);
    expect(actions).toEqual([
      ['bucket.set_versioning', 's3_access_key'],
      ['bucket.set_versioning', 's3_access_key'],
      ['bucket.create', 's3_access_key'],
    ]);
  });

  test('a malformed versioning configuration is MalformedXML and changes nothing', async () => {
    const answer = await signedRequest(server, key, {
      method: 'PUT',
      path: '/made-over-s3',
      query: { versioning: '' },
      body: '<VersioningConfiguration><Status>Sometimes</Status></VersioningConfiguration>',
    });
    expect([answer.status, answer.code], answer.text).toEqual([400, 'MalformedXML']);
    expect((await apiBucket('made-over-s3'))?.versioning).toBe(false);
  });
});
