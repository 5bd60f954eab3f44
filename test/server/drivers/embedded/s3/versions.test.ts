// Versioning as the control plane set it, and multipart uploads, through the SDK: version ids,
// delete markers, reads and deletes by version, the not-empty rule of the API; parts, S3's
// multipart ETag, listing and aborting uploads.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MiB, createAccessKey, createBucket, s3Client, s3ErrorOf, startS3Server } from './support.ts';

let server: Awaited<ReturnType<typeof startS3Server>>;
let s3: S3Client;

beforeAll(async () => {
  server = await startS3Server();
  s3 = s3Client(server, await createAccessKey(server, server.org));
}, 120_000);
afterAll(async () => server?.close());

const md5 = (data: Buffer | string) => createHash('md5').update(data).digest();
const text = async (response: { Body?: { transformToString(): Promise<string> } }) => response.Body!.transformToString();

/** Files holding object bytes under the server's DATA_DIR (completed ones and those still streaming). */
function storedFiles(): string[] {
  const root = path.join(server.dataDir, 'objects');
  const blobs = readdirSync(path.join(root, 'blobs'), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  return [...blobs.map((entry) => entry.name), ...readdirSync(path.join(root, 'tmp'))];
}

describe('versioning', () => {
  test('a versioned bucket keeps every version; GET by version id; a delete adds a marker that hides the key', async () => {
    const bucket = await createBucket(server, server.org, 'history', { versioning: true });
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: 'history' }))).Status).toBe('Enabled');
    const v1 = await s3.send(new PutObjectCommand({ Bucket: 'history', Key: 'doc', Body: 'first' }));
    const v2 = await s3.send(new PutObjectCommand({ Bucket: 'history', Key: 'doc', Body: 'second' }));
    expect(v1.VersionId).toBeTruthy();
    expect(v2.VersionId).not.toBe(v1.VersionId);
    expect(await text(await s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'doc' })))).toBe('second');
    expect(await text(await s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'doc', VersionId: v1.VersionId })))).toBe('first');

    const deleted = await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'doc' }));
    expect(deleted.DeleteMarker).toBe(true);
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'doc' })))).toEqual({ code: 'NoSuchKey', status: 404 });
    expect((await s3.send(new ListObjectsV2Command({ Bucket: 'history' }))).KeyCount).toBe(0);
    // The old versions are still there, and readable by id.
    expect(await text(await s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'doc', VersionId: v2.VersionId })))).toBe('second');
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: 'history' }));
    expect(versions.Versions?.map((v) => [v.VersionId, v.IsLatest, v.Size])).toEqual([
      [v2.VersionId, false, 6],
      [v1.VersionId, false, 5],
    ]);
    expect(versions.DeleteMarkers?.map((m) => [m.VersionId, m.IsLatest])).toEqual([[deleted.VersionId, true]]);

    // Versions and delete markers keep the bucket from being deleted through the API.
    const refused = await server.org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe('bucket_not_empty');

    // Removing the marker by its id brings the object back; removing every version empties the bucket.
    await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'doc', VersionId: deleted.VersionId }));
    expect(await text(await s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'doc' })))).toBe('second');
    await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'doc', VersionId: v2.VersionId }));
    expect(await text(await s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'doc' })))).toBe('first');
    await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'doc', VersionId: v1.VersionId }));
    expect((await s3.send(new ListObjectVersionsCommand({ Bucket: 'history' }))).Versions).toBeUndefined();
    const accepted = await server.org.call('DELETE', `/s3/buckets/${bucket.id}`);
    expect(accepted.status, accepted.text).toBe(202);
  });

  test('ListObjectVersions pages with key and version-id markers, every version and marker once', async () => {
    await createBucket(server, server.org, 'paged', { versioning: true });
    for (const body of ['1', '2', '3']) await s3.send(new PutObjectCommand({ Bucket: 'paged', Key: 'a', Body: body }));
    await s3.send(new DeleteObjectCommand({ Bucket: 'paged', Key: 'a' }));
    await s3.send(new PutObjectCommand({ Bucket: 'paged', Key: 'b', Body: 'b' }));
    const all = await s3.send(new ListObjectVersionsCommand({ Bucket: 'paged' }));
    const expected = [...(all.DeleteMarkers ?? []), ...(all.Versions ?? [])].map((entry) => entry.VersionId).sort();
    expect(expected).toHaveLength(5);
    const seen: string[] = [];
    let keyMarker: string | undefined;
    let versionIdMarker: string | undefined;
    for (let page = 0; page < 10; page++) {
      const listed = await s3.send(
        new ListObjectVersionsCommand({ Bucket: 'paged', MaxKeys: 2, KeyMarker: keyMarker, VersionIdMarker: versionIdMarker }),
      );
      seen.push(...[...(listed.DeleteMarkers ?? []), ...(listed.Versions ?? [])].map((entry) => entry.VersionId!));
      if (!listed.IsTruncated) break;
      keyMarker = listed.NextKeyMarker;
      versionIdMarker = listed.NextVersionIdMarker;
    }
    expect(seen.sort()).toEqual(expected);
  });

  test('a delete marker asked for by version id is 405; HEAD of a deleted key says so', async () => {
    await createBucket(server, server.org, 'markers', { versioning: true });
    await s3.send(new PutObjectCommand({ Bucket: 'markers', Key: 'k', Body: 'x' }));
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: 'markers', Key: 'k' }));
    expect(await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: 'markers', Key: 'k', VersionId: marker.VersionId })))).toMatchObject({
      status: 405,
    });
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'markers', Key: 'k' })))).toMatchObject({ status: 404 });
  });

  test('an unversioned bucket keeps one version per key: an overwrite replaces it and frees its file', async () => {
    await createBucket(server, server.org, 'plain');
    const before = storedFiles().length;
    await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: 'k', Body: 'one' }));
    await s3.send(new PutObjectCommand({ Bucket: 'plain', Key: 'k', Body: 'two' }));
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: 'plain' }));
    expect(versions.Versions?.map((v) => v.VersionId)).toEqual(['null']);
    expect(await text(await s3.send(new GetObjectCommand({ Bucket: 'plain', Key: 'k' })))).toBe('two');
    expect(storedFiles().length).toBe(before + 1);
    await s3.send(new DeleteObjectCommand({ Bucket: 'plain', Key: 'k' }));
    expect(storedFiles().length).toBe(before);
  });
});

describe('multipart uploads', () => {
  test('lib-storage uploads a 12 MiB stream in parts: S3 multipart ETag, bytes intact', async () => {
    await createBucket(server, server.org, 'uploads', { versioning: true });
    const data = randomBytes(12 * MiB + 123);
    const upload = new Upload({ client: s3, params: { Bucket: 'uploads', Key: 'video.mp4', Body: data }, partSize: 5 * MiB, queueSize: 2 });
    const result = await upload.done();
    const parts = [data.subarray(0, 5 * MiB), data.subarray(5 * MiB, 10 * MiB), data.subarray(10 * MiB)];
    const expected = `"${createHash('md5')
      .update(Buffer.concat(parts.map(md5)))
      .digest('hex')}-3"`;
    expect(result.ETag).toBe(expected);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'uploads', Key: 'video.mp4' }));
    expect(got.ETag).toBe(expected);
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
    // A range across a part boundary.
    const across = await s3.send(
      new GetObjectCommand({ Bucket: 'uploads', Key: 'video.mp4', Range: `bytes=${5 * MiB - 3}-${5 * MiB + 2}` }),
    );
    expect(Buffer.from(await across.Body!.transformToByteArray()).equals(data.subarray(5 * MiB - 3, 5 * MiB + 3))).toBe(true);
  });

  test('parts are listed, uploads are listed, a bad part list is refused, an abort frees every part', async () => {
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'uploads', Key: 'pending.bin' }));
    const uploadId = created.UploadId!;
    const filesBefore = storedFiles().length;
    const one = await s3.send(
      new UploadPartCommand({ Bucket: 'uploads', Key: 'pending.bin', UploadId: uploadId, PartNumber: 1, Body: randomBytes(5 * MiB) }),
    );
    const two = await s3.send(
      new UploadPartCommand({ Bucket: 'uploads', Key: 'pending.bin', UploadId: uploadId, PartNumber: 2, Body: 'tail' }),
    );
    const three = await s3.send(
      new UploadPartCommand({ Bucket: 'uploads', Key: 'pending.bin', UploadId: uploadId, PartNumber: 3, Body: 'end' }),
    );
    expect(storedFiles().length).toBe(filesBefore + 3);
    const parts = await s3.send(new ListPartsCommand({ Bucket: 'uploads', Key: 'pending.bin', UploadId: uploadId }));
    expect(parts.Parts?.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual([
      [1, one.ETag, 5 * MiB],
      [2, two.ETag, 4],
      [3, three.ETag, 3],
    ]);
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: 'uploads' }));
    expect(uploads.Uploads?.map((u) => [u.Key, u.UploadId])).toEqual([['pending.bin', uploadId]]);
    // Out of order, or with an ETag that is not the part's.
    expect(
      await s3ErrorOf(
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: 'uploads',
            Key: 'pending.bin',
            UploadId: uploadId,
            MultipartUpload: {
              Parts: [
                { PartNumber: 2, ETag: two.ETag },
                { PartNumber: 1, ETag: one.ETag },
              ],
            },
          }),
        ),
      ),
    ).toEqual({ code: 'InvalidPartOrder', status: 400 });
    expect(
      await s3ErrorOf(
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: 'uploads',
            Key: 'pending.bin',
            UploadId: uploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }] },
          }),
        ),
      ),
    ).toEqual({ code: 'InvalidPart', status: 400 });
    // A part below 5 MiB that is not the last.
    expect(
      await s3ErrorOf(
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: 'uploads',
            Key: 'pending.bin',
            UploadId: uploadId,
            MultipartUpload: {
              Parts: [
                { PartNumber: 2, ETag: two.ETag },
                { PartNumber: 3, ETag: three.ETag },
              ],
            },
          }),
        ),
      ),
    ).toEqual({ code: 'EntityTooSmall', status: 400 });
    // Nothing visible before completion.
    expect(await s3ErrorOf(s3.send(new HeadObjectCommand({ Bucket: 'uploads', Key: 'pending.bin' })))).toMatchObject({ status: 404 });
    await s3.send(new AbortMultipartUploadCommand({ Bucket: 'uploads', Key: 'pending.bin', UploadId: uploadId }));
    expect(storedFiles().length).toBe(filesBefore);
    expect(await s3ErrorOf(s3.send(new ListPartsCommand({ Bucket: 'uploads', Key: 'pending.bin', UploadId: uploadId })))).toEqual({
      code: 'NoSuchUpload',
      status: 404,
    });
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: 'uploads' }))).Uploads).toBeUndefined();
  });
});
