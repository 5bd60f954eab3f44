// Quotas enforced by the embedded store at write time, exactly: per-bucket max_objects and
// max_size_bytes, the organization's ceiling (hard_bytes), concurrent writes at the edge, a
// ceiling set below usage, and usage measured from what is stored.
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MiB, createAccessKey, createBucket, s3Client, s3ErrorOf, setBucketQuota, settles, startS3Server } from './support.ts';

const GiB = 1024 ** 3;
let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  s3 = s3Client(server, await createAccessKey(server, server.org));
}, 120_000);
afterAll(async () => server?.close());

const quotaExceeded = { code: 'QuotaExceeded', status: 403 };
const put = (bucket: string, key: string, body: string | Buffer) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const exists = async (bucket: string, key: string) =>
  s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => true,
    () => false,
  );

describe('per-bucket quotas', () => {
  test('max_objects: the write past the cap is QuotaExceeded and stores nothing; an overwrite and a delete still work', async () => {
    const bucket = await createBucket(server, server.org, 'capped-count');
    await setBucketQuota(server, server.org, bucket.id, { max_objects: 2 });
    await put('capped-count', 'a', 'a');
    await put('capped-count', 'b', 'b');
    expect(await s3ErrorOf(put('capped-count', 'c', 'c'))).toEqual(quotaExceeded);
    expect(await exists('capped-count', 'c')).toBe(false);
    // Replacing a key of an unversioned bucket adds no object.
    await put('capped-count', 'a', 'a again');
    await s3.send(new DeleteObjectCommand({ Bucket: 'capped-count', Key: 'b' }));
    await put('capped-count', 'c', 'c');
    expect(await exists('capped-count', 'c')).toBe(true);
  });

  test('max_size_bytes: a write that would pass it is refused; what it replaces is counted out', async () => {
    const bucket = await createBucket(server, server.org, 'capped-size');
    await setBucketQuota(server, server.org, bucket.id, { max_size_bytes: 1000 });
    await put('capped-size', 'one', Buffer.alloc(600));
    expect(await s3ErrorOf(put('capped-size', 'two', Buffer.alloc(401)))).toEqual(quotaExceeded);
    await put('capped-size', 'two', Buffer.alloc(400));
    // 600 replaced by 600: still 1000.
    await put('capped-size', 'one', Buffer.alloc(600));
    expect(await s3ErrorOf(put('capped-size', 'three', Buffer.alloc(1)))).toEqual(quotaExceeded);
  });

  test('in a versioned bucket every version and delete marker counts; deletes work at the cap', async () => {
    const bucket = await createBucket(server, server.org, 'capped-versions', { versioning: true });
    await setBucketQuota(server, server.org, bucket.id, { max_objects: 3 });
    const v1 = await put('capped-versions', 'k', 'v1');
    await put('capped-versions', 'k', 'v2');
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: 'capped-versions', Key: 'k' }));
    expect(marker.DeleteMarker).toBe(true);
    expect(await s3ErrorOf(put('capped-versions', 'k', 'v3'))).toEqual(quotaExceeded);
    expect(await s3ErrorOf(put('capped-versions', 'other', 'x'))).toEqual(quotaExceeded);
    // Deleting one version for good frees its place.
    await s3.send(new DeleteObjectCommand({ Bucket: 'capped-versions', Key: 'k', VersionId: v1.VersionId }));
    await put('capped-versions', 'k', 'v3');
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: 'capped-versions' }));
    expect((versions.Versions?.length ?? 0) + (versions.DeleteMarkers?.length ?? 0)).toBe(3);
  });

  test('multipart: uploaded parts count against the cap, so the part that would pass it is refused', async () => {
    const bucket = await createBucket(server, server.org, 'capped-parts');
    await setBucketQuota(server, server.org, bucket.id, { max_size_bytes: 8 * MiB });
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'capped-parts', Key: 'big' }));
    const first = await s3.send(
      new UploadPartCommand({ Bucket: 'capped-parts', Key: 'big', UploadId, PartNumber: 1, Body: Buffer.alloc(5 * MiB) }),
    );
    expect(
      await s3ErrorOf(
        s3.send(new UploadPartCommand({ Bucket: 'capped-parts', Key: 'big', UploadId, PartNumber: 2, Body: Buffer.alloc(5 * MiB) })),
      ),
    ).toEqual(quotaExceeded);
    // Nor can a plain write use the space the parts hold.
    expect(await s3ErrorOf(put('capped-parts', 'small', Buffer.alloc(4 * MiB)))).toEqual(quotaExceeded);
    const last = await s3.send(
      new UploadPartCommand({ Bucket: 'capped-parts', Key: 'big', UploadId, PartNumber: 2, Body: Buffer.alloc(3 * MiB) }),
    );
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'capped-parts',
        Key: 'big',
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: first.ETag },
            { PartNumber: 2, ETag: last.ETag },
          ],
        },
      }),
    );
    expect((await s3.send(new HeadObjectCommand({ Bucket: 'capped-parts', Key: 'big' }))).ContentLength).toBe(8 * MiB);
  });

  test('a small write refused while its body was already being read leaves no file and no reservation behind', async () => {
    // The SDK sends a body of a few MiB without waiting to be asked: the server reads it at once
    // (it reserves no space for it, its limits are checked as it commits), and must remove it
    // and the claim on its file when the commit is refused.
    const bucket = await createBucket(server, server.org, 'capped-early');
    await setBucketQuota(server, server.org, bucket.id, { max_size_bytes: MiB });
    for (let attempt = 0; attempt < 5; attempt++) {
      const refusal = await put('capped-early', `large-${attempt}`, Buffer.alloc(3 * MiB, attempt)).then(
        () => undefined,
        (error: Error & { Code?: string; $metadata?: { httpStatusCode?: number } }) => ({
          code: error.Code,
          status: error.$metadata?.httpStatusCode,
          message: error.message,
        }),
      );
      expect(refusal).toEqual({ ...quotaExceeded, message: "The bucket's max_size_bytes (1048576) would be exceeded" });
      expect(readdirSync(path.join(server.dataDir, 'objects', 'tmp'))).toEqual([]);
      expect((await server.pool.query('SELECT count(*)::int AS n FROM store_reservations')).rows[0].n).toBe(0);
    }
    await put('capped-early', 'fits', Buffer.alloc(MiB, 1));
    expect(await exists('capped-early', 'fits')).toBe(true);
    expect(await exists('capped-early', 'large-0')).toBe(false);
  });

  test('concurrent writes at the edge cannot overshoot together: exactly what fits is stored', async () => {
    const bucket = await createBucket(server, server.org, 'edge');
    const size = 100 * 1024;
    await setBucketQuota(server, server.org, bucket.id, { max_size_bytes: 10 * size, max_objects: 1000 });
    const outcomes = await Promise.all(
      Array.from({ length: 25 }, (_, index) =>
        put('edge', `part-${index}`, Buffer.alloc(size, index)).then(
          () => 'stored',
          (error: { Code?: string }) => error.Code,
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'stored')).toHaveLength(10);
    expect(outcomes.filter((outcome) => outcome === 'QuotaExceeded')).toHaveLength(15);
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: 'edge' }));
    expect(versions.Versions?.reduce((total, version) => total + (version.Size ?? 0), 0)).toBe(10 * size);
  });
});

describe("the organization's ceiling", () => {
  test('a write larger than the ceiling is refused before its body is asked for', async () => {
    const org = await server.createOrg('Ceiling Co');
    const key = await createAccessKey(server, org);
    await createBucket(server, org, 'ceiling-bucket');
    expect((await org.call('PUT', '/s3/quota', { body: { hard_bytes: GiB } })).status).toBe(200);
    const client = s3Client(server, key);
    const url = await getSignedUrl(client, new PutObjectCommand({ Bucket: 'ceiling-bucket', Key: 'huge' }), { expiresIn: 60 });
    // Declares 1 GiB + 1 and waits to be asked for the body (Expect: 100-continue): it never is.
    const answer = await new Promise<{ status: number; body: string; askedForBody: boolean }>((resolve, reject) => {
      let askedForBody = false;
      const sent = httpRequest(
        url,
        { method: 'PUT', headers: { 'Content-Length': String(GiB + 1), Expect: '100-continue' } },
        (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode!, body, askedForBody }));
        },
      );
      sent.on('continue', () => (askedForBody = true));
      sent.on('error', reject);
      sent.flushHeaders();
    });
    expect(answer.askedForBody).toBe(false);
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('<Code>QuotaExceeded</Code>');
  });

  test('set below current usage: writes stop (deletes work) until usage falls below it; usage is measured from the store', async () => {
    const org = await server.createOrg('Full Disk Inc');
    const client = s3Client(server, await createAccessKey(server, org));
    await createBucket(server, org, 'archive');
    // Past 1 GiB (the least ceiling) without sending a gigabyte: a multipart object whose parts are
    // copies of one 64 MiB object, each part sharing the source's file yet counted at its full size.
    const seedSize = 64 * MiB;
    await client.send(new PutObjectCommand({ Bucket: 'archive', Key: 'seed', Body: Buffer.alloc(seedSize, 7) }));
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'archive', Key: 'dump' }));
    const parts = [];
    for (let PartNumber = 1; PartNumber <= 17; PartNumber++) {
      const { CopyPartResult } = await client.send(
        new UploadPartCopyCommand({ Bucket: 'archive', Key: 'dump', UploadId, PartNumber, CopySource: 'archive/seed' }),
      );
      parts.push({ PartNumber, ETag: CopyPartResult!.ETag });
    }
    await client.send(new CompleteMultipartUploadCommand({ Bucket: 'archive', Key: 'dump', UploadId, MultipartUpload: { Parts: parts } }));
    await client.send(new DeleteObjectCommand({ Bucket: 'archive', Key: 'seed' }));
    const size = 17 * seedSize;
    await client.send(new PutObjectCommand({ Bucket: 'archive', Key: 'small', Body: 'x' }));
    // The reconciler reads the usage the store measured.
    await settles(async () => {
      const quota = await org.call('GET', '/s3/quota');
      expect(quota.body.usage_bytes).toBe(size + 1);
      expect(quota.body.usage_objects).toBe(2);
    });
    const lowered = await org.call('PUT', '/s3/quota', { body: { hard_bytes: GiB } });
    expect(lowered.status, lowered.text).toBe(200);
    expect(lowered.body.warning).toBe('below_current_usage');
    expect(await s3ErrorOf(client.send(new PutObjectCommand({ Bucket: 'archive', Key: 'more', Body: 'y' })))).toEqual(quotaExceeded);
    // Even a write that would shrink usage waits for usage to fall below the ceiling.
    expect(await s3ErrorOf(client.send(new PutObjectCommand({ Bucket: 'archive', Key: 'small', Body: '' })))).toEqual(quotaExceeded);
    await client.send(new DeleteObjectCommand({ Bucket: 'archive', Key: 'dump' }));
    await client.send(new PutObjectCommand({ Bucket: 'archive', Key: 'more', Body: 'y' }));
    await settles(async () => {
      const quota = await org.call('GET', '/s3/quota');
      expect(quota.body.usage_bytes).toBe(2);
      expect(quota.body.frozen_reason).toBeNull();
    });
  }, 120_000);
});
