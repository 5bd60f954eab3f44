// The data plane through the official AWS SDK, the same tests on every store with an S3 endpoint:
// the embedded store (the default, sdk.test.ts) and Ceph's RADOS Gateway through the rgw driver
// (sdk.system.test.ts; drivers.ts: a single-node Ceph for that file when Ceph is installed, and
// always in CI). Each test makes its
// bucket and its S3 access key through the platform API, then talks S3 with @aws-sdk/client-s3
// (path-style; checksums only where S3 requires them, which RGW Pacific needs) to the endpoint the
// platform tells users. Expectations differ per store only where RGW differs, each said in the
// test's name and in the README's "Object storage on Ceph". The organization ceiling set below
// usage (writes frozen, deletes working) runs through this same SDK data plane in
// behaviour.ts; the embedded store's own SDK tests (default checksums, aws-chunked uploads,
// presigned URLs, conditional reads, crash mid-upload) are in test/server/s3.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  ListPartsCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../../support/server.ts';
import { s3ErrorOf, settles } from '../../drivers/embedded/s3/support.ts';
import { issuedAccessKey, s3Client, type StorageDriverFactory, type StorageDriverUnderTest } from './drivers.ts';
import { activeBucket, softDeleted } from './support.ts';

const MiB = 1024 ** 2;
const md5 = (body: Buffer | string) => `"${createHash('md5').update(body).digest('hex')}"`;
const bytesOf = async (client: S3Client, Bucket: string, Key: string, extra: { Range?: string; VersionId?: string } = {}) =>
  Buffer.from(await (await client.send(new GetObjectCommand({ Bucket, Key, ...extra }))).Body!.transformToByteArray());

/** Where RGW answers otherwise than the embedded store (README: "Where RGW differs"). */
interface StoreExpectations {
  /** CompleteMultipartUpload's ETag: S3's `"md5-of-md5s-N"`, or empty from RGW Pacific (HeadObject has it). */
  completedMultipartEtag: 'multipart' | 'empty';
  /** A revoked key stops when the revoke is accepted (202), or once its operation has removed it from RGW. */
  keyRefusedOnceRevoke: 'accepted' | 'finished';
  /** Another organization's bucket: NoSuchBucket on both (bucket names are each organization's own; RGW keeps them in its tenant). */
  otherOrganizationsBucket: { code: string; status: number };
  /** A soft-deleted bucket: NoSuchBucket, or RGW's AccessDenied (the bucket is linked back to the platform's user). */
  softDeletedBucket: { code: string; status: number };
  /** ListParts of an aborted upload: S3's NoSuchUpload, or RGW Pacific's NoSuchKey (both 404). */
  abortedUploadParts: string;
  /**
   * Whether usage_objects counts delete markers beside versions. RGW's statistics count no delete
   * marker; the driver lists them only once a bucket holds nothing else (bucket_not_empty is exact).
   */
  usageCountsDeleteMarkers: 'always' | 'when-nothing-else';
}

const EXPECTATIONS: Record<'embedded' | 'rgw', StoreExpectations> = {
  embedded: {
    completedMultipartEtag: 'multipart',
    keyRefusedOnceRevoke: 'accepted',
    otherOrganizationsBucket: { code: 'NoSuchBucket', status: 404 },
    softDeletedBucket: { code: 'NoSuchBucket', status: 404 },
    abortedUploadParts: 'NoSuchUpload',
    usageCountsDeleteMarkers: 'always',
  },
  rgw: {
    completedMultipartEtag: 'empty',
    keyRefusedOnceRevoke: 'finished',
    otherOrganizationsBucket: { code: 'NoSuchBucket', status: 404 },
    softDeletedBucket: { code: 'AccessDenied', status: 403 },
    abortedUploadParts: 'NoSuchKey',
    usageCountsDeleteMarkers: 'when-nothing-else',
  },
};

/** The tests of one store with an S3 endpoint, for `describe.each` over the stores of a tier. */
export function sdkTests(factory: StorageDriverFactory): void {
  const expected = EXPECTATIONS[factory.name as 'embedded' | 'rgw'];
  let driver: StorageDriverUnderTest;
  let server: TestServer;

  beforeAll(async () => {
    driver = await factory.start();
    server = await startTestServer(driver.env);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await driver?.stop();
  });

  /** An organization with a bucket and an S3 client of its own, all made through the platform API. */
  async function tenant(name: string, bucket: string, versioning = false) {
    const org = await server.createOrg(name);
    const made = await activeBucket(server, org, bucket, versioning);
    const key = await issuedAccessKey(server, org);
    return { org, bucket: made as { id: string }, key, client: s3Client(driver.s3Endpoint(server)!, key) };
  }

  test('the endpoint is the one the platform tells users', () => {
    const endpoint = driver.s3Endpoint(server);
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // With rgw it is the gateway's (RGW_PUBLIC_URL, else RGW_ENDPOINT), not an endpoint of ours.
    expect(endpoint === driver.env.RGW_ENDPOINT).toBe(factory.name === 'rgw');
  });

  test('put, get and head an object; ranges: first bytes, a middle, a suffix', async () => {
    const { client } = await tenant('Readers', 'reads');
    const body = Buffer.from(Array.from({ length: 1000 }, (_, index) => index % 251));
    const put = await client.send(
      new PutObjectCommand({ Bucket: 'reads', Key: 'dir/data.bin', Body: body, ContentType: 'application/x-test' }),
    );
    expect(put.ETag).toBe(md5(body));
    expect((await bytesOf(client, 'reads', 'dir/data.bin')).equals(body)).toBe(true);
    const head = await client.send(new HeadObjectCommand({ Bucket: 'reads', Key: 'dir/data.bin' }));
    expect(head).toMatchObject({ ContentLength: 1000, ETag: md5(body), ContentType: 'application/x-test' });

    const ranged = await client.send(new GetObjectCommand({ Bucket: 'reads', Key: 'dir/data.bin', Range: 'bytes=100-199' }));
    expect(ranged.ContentRange).toBe('bytes 100-199/1000');
    expect(Buffer.from(await ranged.Body!.transformToByteArray()).equals(body.subarray(100, 200))).toBe(true);
    expect((await bytesOf(client, 'reads', 'dir/data.bin', { Range: 'bytes=0-9' })).equals(body.subarray(0, 10))).toBe(true);
    expect((await bytesOf(client, 'reads', 'dir/data.bin', { Range: 'bytes=-10' })).equals(body.subarray(990))).toBe(true);
    expect(await s3ErrorOf(client.send(new GetObjectCommand({ Bucket: 'reads', Key: 'missing' })))).toEqual({
      code: 'NoSuchKey',
      status: 404,
    });
  });

  test('versioning: version ids, GET by version, a delete marker hides the key, ListObjectVersions lists both', async () => {
    const { client } = await tenant('Versioners', 'history', true);
    const v1 = await client.send(new PutObjectCommand({ Bucket: 'history', Key: 'notes.txt', Body: 'first' }));
    const v2 = await client.send(new PutObjectCommand({ Bucket: 'history', Key: 'notes.txt', Body: 'second!' }));
    expect(v1.VersionId).toBeTruthy();
    expect(v2.VersionId).toBeTruthy();
    expect(v1.VersionId).not.toBe(v2.VersionId);
    expect((await bytesOf(client, 'history', 'notes.txt', { VersionId: v1.VersionId })).toString()).toBe('first');
    expect((await bytesOf(client, 'history', 'notes.txt')).toString()).toBe('second!');

    const marker = await client.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'notes.txt' }));
    expect(marker.DeleteMarker).toBe(true);
    expect(marker.VersionId).toBeTruthy();
    expect((await s3ErrorOf(client.send(new GetObjectCommand({ Bucket: 'history', Key: 'notes.txt' })))).status).toBe(404);
    expect((await bytesOf(client, 'history', 'notes.txt', { VersionId: v1.VersionId })).toString()).toBe('first');

    const listed = await client.send(new ListObjectVersionsCommand({ Bucket: 'history' }));
    expect(listed.Versions?.map((version) => [version.VersionId, version.Size, version.IsLatest])).toEqual([
      [v2.VersionId, 7, false],
      [v1.VersionId, 5, false],
    ]);
    expect(listed.DeleteMarkers?.map((entry) => [entry.VersionId, entry.IsLatest])).toEqual([[marker.VersionId, true]]);

    // Removing the marker by its version id brings the key back.
    await client.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'notes.txt', VersionId: marker.VersionId }));
    expect((await bytesOf(client, 'history', 'notes.txt')).toString()).toBe('second!');
  });

  test(`multipart: create, upload parts, list parts and uploads, complete (ETag ${expected.completedMultipartEtag === 'empty' ? 'empty on RGW Pacific' : 'as S3 makes it'}), abort`, async () => {
    const { client } = await tenant('Uploaders', 'parts');
    const partBodies = [Buffer.alloc(5 * MiB, 1), Buffer.alloc(1024, 2)];
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'parts', Key: 'big.bin' }));
    const parts = [];
    for (const [index, Body] of partBodies.entries()) {
      const { ETag } = await client.send(new UploadPartCommand({ Bucket: 'parts', Key: 'big.bin', UploadId, PartNumber: index + 1, Body }));
      expect(ETag).toBe(md5(Body));
      parts.push({ ETag, PartNumber: index + 1 });
    }
    const listedParts = await client.send(new ListPartsCommand({ Bucket: 'parts', Key: 'big.bin', UploadId }));
    expect(listedParts.Parts?.map((part) => [part.PartNumber, part.Size])).toEqual([
      [1, 5 * MiB],
      [2, 1024],
    ]);
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: 'parts' }));
    expect(uploads.Uploads?.map((upload) => [upload.Key, upload.UploadId])).toEqual([['big.bin', UploadId]]);

    const completed = await client.send(
      new CompleteMultipartUploadCommand({ Bucket: 'parts', Key: 'big.bin', UploadId, MultipartUpload: { Parts: parts } }),
    );
    const partsDigest = createHash('md5')
      .update(Buffer.concat(partBodies.map((body) => createHash('md5').update(body).digest())))
      .digest('hex');
    const multipartEtag = `"${partsDigest}-2"`;
    expect(completed.ETag ?? '').toBe(expected.completedMultipartEtag === 'empty' ? '' : multipartEtag);
    const head = await client.send(new HeadObjectCommand({ Bucket: 'parts', Key: 'big.bin' }));
    expect(head).toMatchObject({ ETag: multipartEtag, ContentLength: 5 * MiB + 1024 });
    expect((await bytesOf(client, 'parts', 'big.bin')).equals(Buffer.concat(partBodies))).toBe(true);

    // An aborted upload leaves no upload, no part and no object.
    const aborted = await client.send(new CreateMultipartUploadCommand({ Bucket: 'parts', Key: 'dropped.bin' }));
    await client.send(new UploadPartCommand({ Bucket: 'parts', Key: 'dropped.bin', UploadId: aborted.UploadId, PartNumber: 1, Body: 'x' }));
    await client.send(new AbortMultipartUploadCommand({ Bucket: 'parts', Key: 'dropped.bin', UploadId: aborted.UploadId }));
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: 'parts' }))).Uploads ?? []).toEqual([]);
    expect(
      (await s3ErrorOf(client.send(new ListPartsCommand({ Bucket: 'parts', Key: 'dropped.bin', UploadId: aborted.UploadId })))).code,
    ).toBe(expected.abortedUploadParts);
    expect((await s3ErrorOf(client.send(new HeadObjectCommand({ Bucket: 'parts', Key: 'dropped.bin' })))).status).toBe(404);
  });

  test('DeleteObjects removes several keys in one request and reports each', async () => {
    const { client } = await tenant('Bulk Deleters', 'bulk');
    for (const Key of ['a', 'b', 'c']) await client.send(new PutObjectCommand({ Bucket: 'bulk', Key, Body: Key }));
    const deleted = await client.send(new DeleteObjectsCommand({ Bucket: 'bulk', Delete: { Objects: [{ Key: 'a' }, { Key: 'c' }] } }));
    expect(deleted.Deleted?.map((entry) => entry.Key).sort()).toEqual(['a', 'c']);
    expect(deleted.Errors ?? []).toEqual([]);
    const left = await client.send(new ListObjectsV2Command({ Bucket: 'bulk' }));
    expect(left.Contents?.map((entry) => entry.Key)).toEqual(['b']);
  });

  test("a write over the bucket's quota is 403 QuotaExceeded and stores nothing", async () => {
    const { org, client, bucket } = await tenant('Quota Keepers', 'capped');
    const set = await org.call('PUT', `/s3/buckets/${bucket.id}/quota`, { body: { max_size_bytes: 10_000 } });
    expect((await server.waitForOperation(org, set.body.operation.id)).state).toBe('succeeded');
    await client.send(new PutObjectCommand({ Bucket: 'capped', Key: 'fits', Body: Buffer.alloc(6000, 1) }));
    expect(await s3ErrorOf(client.send(new PutObjectCommand({ Bucket: 'capped', Key: 'too-much', Body: Buffer.alloc(5000, 1) })))).toEqual({
      code: 'QuotaExceeded',
      status: 403,
    });
    expect((await s3ErrorOf(client.send(new HeadObjectCommand({ Bucket: 'capped', Key: 'too-much' })))).status).toBe(404);
    expect((await client.send(new ListObjectsV2Command({ Bucket: 'capped' }))).Contents?.map((entry) => entry.Key)).toEqual(['fits']);
  });

  test(`a revoked key is refused (InvalidAccessKeyId) ${expected.keyRefusedOnceRevoke === 'accepted' ? 'as soon as the revoke is accepted' : 'once the revoke operation has finished (RGW)'}`, async () => {
    const { org, key, client } = await tenant('Revokers', 'revoked-keys');
    await client.send(new PutObjectCommand({ Bucket: 'revoked-keys', Key: 'before', Body: 'ok' }));
    const revoked = await org.call('DELETE', `/s3/access-keys/${key.keyId}`);
    expect(revoked.status, revoked.text).toBe(202);
    const refusal = { code: 'InvalidAccessKeyId', status: 403 };
    if (expected.keyRefusedOnceRevoke === 'accepted') {
      expect(await s3ErrorOf(client.send(new GetObjectCommand({ Bucket: 'revoked-keys', Key: 'before' })))).toEqual(refusal);
    }
    expect((await server.waitForOperation(org, revoked.body.operation.id)).state).toBe('succeeded');
    expect(await s3ErrorOf(client.send(new GetObjectCommand({ Bucket: 'revoked-keys', Key: 'before' })))).toEqual(refusal);
    expect(await s3ErrorOf(client.send(new PutObjectCommand({ Bucket: 'revoked-keys', Key: 'after', Body: 'no' })))).toEqual(refusal);
  });

  test(`another organization's bucket is out of reach (${expected.otherOrganizationsBucket.code} on this store)`, async () => {
    const mine = await tenant('Own Team', 'own-files');
    const rival = await tenant('Rival Team', 'rival-files');
    await rival.client.send(new PutObjectCommand({ Bucket: 'rival-files', Key: 'plan.txt', Body: 'secret plan' }));
    await mine.client.send(new PutObjectCommand({ Bucket: 'own-files', Key: 'mine.txt', Body: 'mine' }));
    const reach = expected.otherOrganizationsBucket;
    expect(await s3ErrorOf(mine.client.send(new GetObjectCommand({ Bucket: 'rival-files', Key: 'plan.txt' })))).toEqual(reach);
    expect(await s3ErrorOf(mine.client.send(new PutObjectCommand({ Bucket: 'rival-files', Key: 'x', Body: 'x' })))).toEqual(reach);
    expect(await s3ErrorOf(mine.client.send(new ListObjectVersionsCommand({ Bucket: 'rival-files' })))).toEqual(reach);
    expect(await s3ErrorOf(rival.client.send(new GetObjectCommand({ Bucket: 'own-files', Key: 'mine.txt' })))).toEqual(reach);
    expect((await bytesOf(rival.client, 'rival-files', 'plan.txt')).toString()).toBe('secret plan');
  });

  test(`a soft-deleted bucket serves nothing (${expected.softDeletedBucket.code} on this store); restored, it serves its objects again`, async () => {
    const { org, client, bucket } = await tenant('Soft Deleters', 'come-and-go');
    const emptied = await activeBucket(server, org, 'emptied');
    await client.send(new PutObjectCommand({ Bucket: 'come-and-go', Key: 'kept.txt', Body: 'kept' }));
    // A bucket with objects cannot be deleted; an empty one is soft-deleted and serves nothing.
    expect((await org.call('DELETE', `/s3/buckets/${bucket.id}`)).body.code).toBe('bucket_not_empty');
    await softDeleted(server, org, emptied.id);
    const gone = expected.softDeletedBucket;
    expect(await s3ErrorOf(client.send(new PutObjectCommand({ Bucket: 'emptied', Key: 'x', Body: 'x' })))).toEqual(gone);
    expect(await s3ErrorOf(client.send(new ListObjectsV2Command({ Bucket: 'emptied' })))).toEqual(gone);
    expect((await s3ErrorOf(client.send(new HeadObjectCommand({ Bucket: 'emptied', Key: 'x' })))).status).toBe(gone.status);

    const restored = await org.call('POST', `/s3/buckets/${emptied.id}/restore`);
    expect((await server.waitForOperation(org, restored.body.operation.id)).state).toBe('succeeded');
    await client.send(new PutObjectCommand({ Bucket: 'emptied', Key: 'back.txt', Body: 'back' }));
    expect((await bytesOf(client, 'emptied', 'back.txt')).toString()).toBe('back');
  });

  test(`usage, observed figures and bucket_not_empty count every version and delete marker${expected.usageCountsDeleteMarkers === 'always' ? '' : ' (RGW: usage counts markers once nothing else is left)'}`, async () => {
    const { org, client, bucket } = await tenant('Counters', 'counted', true);
    const observed = (await org.call('GET', `/s3/buckets/${bucket.id}`)).body;
    expect(observed).toMatchObject({
      observed_exists: true,
      observed_versioning: true,
      observed_quota: { max_objects: null, max_size_bytes: null },
    });
    const usage = async (bytes: number, objects: number) =>
      settles(async () => {
        const quota = (await org.call('GET', '/s3/quota')).body;
        expect([quota.usage_bytes, quota.usage_objects]).toEqual([bytes, objects]);
      }, 30_000);
    const v1 = await client.send(new PutObjectCommand({ Bucket: 'counted', Key: 'k', Body: Buffer.alloc(1000, 1) }));
    const v2 = await client.send(new PutObjectCommand({ Bucket: 'counted', Key: 'k', Body: Buffer.alloc(2000, 2) }));
    const marker = await client.send(new DeleteObjectCommand({ Bucket: 'counted', Key: 'k' }));
    // Nothing is visible, but 3000 bytes in two versions and a delete marker are stored.
    expect((await client.send(new ListObjectsV2Command({ Bucket: 'counted' }))).Contents ?? []).toEqual([]);
    await usage(3000, expected.usageCountsDeleteMarkers === 'always' ? 3 : 2);

    const notEmpty = async () => (await org.call('DELETE', `/s3/buckets/${bucket.id}`)).body?.code;
    expect(await notEmpty()).toBe('bucket_not_empty');
    for (const VersionId of [v1.VersionId, v2.VersionId])
      await client.send(new DeleteObjectCommand({ Bucket: 'counted', Key: 'k', VersionId }));
    // The delete marker alone still keeps the bucket, and is counted on every store.
    expect(await notEmpty()).toBe('bucket_not_empty');
    await usage(0, 1);
    await client.send(new DeleteObjectCommand({ Bucket: 'counted', Key: 'k', VersionId: marker.VersionId }));
    await usage(0, 0);
    expect((await softDeleted(server, org, bucket.id)).state).toBe('soft_deleted');
  });
}
