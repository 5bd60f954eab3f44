import type { Readable } from 'node:stream';
import type { ServedBucket } from '../rows.ts';
import { CHECKSUM_ALGORITHMS, isChecksumAlgorithm } from '../checksums.ts';
import { hashing } from '../hashing.ts';
import { aclOfHeaders, assertAclsTaken } from './acl.ts';
import { assertCompletionKey, copySourceKey, encryptionHeaders, partWrapping, writeEncryption } from './encryption.ts';
import { S3Error, invalidArgument } from './errors.ts';
import {
  assertEarlyWriteCondition,
  attributesOf,
  copySourceVersion,
  sharedSource,
  taggingOf,
  writeConditionOf,
} from './object-handlers.ts';
import { writeLock } from './object-lock.ts';
import { checkedSmallBody, headerOf, sendXml, signedUploadBody, type S3Handler, type S3Request } from './request.ts';
import { blocks, document, malformedXml, text, type XmlNode } from './xml.ts';

const OWNER = (bucket: ServedBucket) => ({ ID: bucket.org_id, DisplayName: 'cloud-platform' });

const createUpload: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  assertAclsTaken(request, bucket);
  const requested = request.req.headers['x-amz-checksum-algorithm'];
  const algorithm = typeof requested === 'string' ? requested.toLowerCase() : null;
  if (algorithm !== null && !isChecksumAlgorithm(algorithm))
    throw invalidArgument('Checksum algorithm provided is unsupported.', 'x-amz-checksum-algorithm', String(requested));
  const sealing = writeEncryption(request, bucket);
  const lock = writeLock(request.req.headers, bucket);
  const uploadId = await request.store.multipart.createUpload(
    bucket.id,
    request.key,
    { ...attributesOf(request), tags: taggingOf(request), acl: aclOfHeaders(request, bucket.org_id) },
    algorithm,
    { encryption: sealing?.record, lock },
  );
  const headers: Record<string, string> = algorithm ? { 'x-amz-checksum-algorithm': algorithm.toUpperCase() } : {};
  Object.assign(headers, encryptionHeaders(sealing?.record));
  sendXml(
    request.res,
    200,
    document('InitiateMultipartUploadResult', { Bucket: bucket.name, Key: request.key, UploadId: uploadId }),
    headers,
  );
};

function partNumberOf(request: S3Request): number {
  const raw = request.query.get('partNumber') ?? '';
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > 10_000)
    throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive', 'partNumber', raw);
  return value;
}

/** `x-amz-copy-source-range` (`bytes=first-last`, both given), within the source's size; the whole source when absent. */
function copyRange(request: S3Request, size: number): { start: number; end: number } {
  const raw = headerOf(request, 'x-amz-copy-source-range');
  if (raw === undefined) return { start: 0, end: size - 1 };
  const match = /^bytes=(\d+)-(\d+)$/.exec(raw.trim());
  if (!match)
    throw invalidArgument('The x-amz-copy-source-range value must be of the form bytes=first-last', 'x-amz-copy-source-range', raw);
  const start = Number(match[1]);
  const end = Number(match[2]);
  if (end < start)
    throw invalidArgument('The x-amz-copy-source-range value must be of the form bytes=first-last', 'x-amz-copy-source-range', raw);
  if (end >= size)
    throw new S3Error('InvalidRange', 416, 'The requested range is not satisfiable', {
      RangeRequested: raw,
      ActualObjectSize: String(size),
    });
  return { start, end };
}

/**
 * UploadPartCopy: a part made of (a range of) an existing object, read from the store and written
 * as any part is (its own file, its ETag the MD5 of its bytes, its space reserved under the quotas);
 * a whole one-part object sealed as the upload is shares its file instead (see sharedSource).
 */
const uploadPartCopy: S3Handler = async (request) => {
  const { sourceBucket, sourceVersion } = await copySourceVersion(request);
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const uploadId = request.query.get('uploadId')!;
  const partNumber = partNumberOf(request);
  // The part is sealed as its upload is (an SSE-C upload's parts each give its key again); an
  // encrypted source is opened with its own key (x-amz-copy-source-server-side-encryption-customer-*).
  const upload = await request.store.multipart.upload(bucket.id, request.key, uploadId);
  const wrapping = partWrapping(request, upload);
  const sourceKey = copySourceKey(request, sourceVersion);
  const { start, end } = copyRange(request, sourceVersion.size_bytes);
  const size = end - start + 1;
  // A whole object copied as a part keeps its bytes as they are: the part may share its file.
  const shared = start === 0 && end === sourceVersion.size_bytes - 1 ? sharedSource(sourceVersion, wrapping?.by, false) : undefined;
  const part = await request.store.multipart.uploadPart({
    orgId: bucket.org_id,
    bucketId: bucket.id,
    key: request.key,
    uploadId,
    partNumber,
    size,
    ...(shared
      ? { body: { sharedSegment: shared.segment }, transforms: [], digests: () => Promise.resolve({ etag: shared.etag, checksums: {} }) }
      : copiedRange(request.store.objects.read(sourceVersion, start, end, sourceKey), size)),
    wrapping,
  });
  sendXml(request.res, 200, document('CopyPartResult', { ETag: `"${part.etag}"`, LastModified: part.last_modified.toISOString() }), {
    ...encryptionHeaders(upload.encryption),
    ...(sourceBucket.versioning || sourceBucket.versioning_configured ? { 'x-amz-copy-source-version-id': sourceVersion.version_id } : {}),
  });
};

/** A copied range's bytes, hashed as the part is written: its ETag is their MD5. */
function copiedRange(body: Readable, size: number) {
  const hashes = hashing(new Set(['md5'] as const), size);
  return {
    body,
    transforms: [hashes.transform],
    digests: async () => ({ etag: (await hashes.result()).get('md5')!.toString('hex'), checksums: {} }),
  };
}

const uploadPart: S3Handler = async (request) => {
  if (request.req.headers['x-amz-copy-source'] !== undefined) return uploadPartCopy(request);
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const uploadId = request.query.get('uploadId')!;
  const partNumber = partNumberOf(request);
  // The part is sealed as its upload is: an SSE-C upload's parts each give its key again.
  const upload = await request.store.multipart.upload(bucket.id, request.key, uploadId);
  const wrapping = partWrapping(request, upload);
  const body = signedUploadBody(request);
  const part = await request.store.multipart.uploadPart({
    orgId: bucket.org_id,
    bucketId: bucket.id,
    key: request.key,
    uploadId,
    partNumber,
    ...body,
    wrapping,
  });
  const { res } = request;
  res.statusCode = 200;
  res.setHeader('ETag', `"${part.etag}"`);
  for (const [name, value] of Object.entries(encryptionHeaders(upload.encryption))) res.setHeader(name, value);
  for (const [algorithm, value] of Object.entries(part.checksums)) res.setHeader(`x-amz-checksum-${algorithm}`, value);
  res.setHeader('Content-Length', '0');
  res.end();
};

const completeUpload: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const uploadId = request.query.get('uploadId')!;
  // The upload must exist (or have been completed lately: a retry) before its (small) body is read.
  const completed = await request.store.multipart.completed(bucket.id, request.key, uploadId);
  if (!completed) assertCompletionKey(request, await request.store.multipart.upload(bucket.id, request.key, uploadId));
  const condition = writeConditionOf(request);
  if (!completed) await assertEarlyWriteCondition(request, bucket, condition);
  const xml = await checkedSmallBody(request);
  const parts = blocks(xml, 'Part').map((block) => {
    const partNumber = Number(text(block, 'PartNumber'));
    const checksums: Record<string, string> = {};
    for (const [element, algorithm] of [
      ['ChecksumCRC32', 'crc32'],
      ['ChecksumCRC32C', 'crc32c'],
      ['ChecksumCRC64NVME', 'crc64nvme'],
      ['ChecksumSHA1', 'sha1'],
      ['ChecksumSHA256', 'sha256'],
    ] as const) {
      const value = text(block, element);
      if (value !== undefined) checksums[algorithm] = value;
    }
    return { partNumber, etag: text(block, 'ETag') ?? '', checksums };
  });
  if (parts.length === 0 || parts.some((part) => !Number.isInteger(part.partNumber))) throw malformedXml();
  const version = await request.store.multipart.complete({
    orgId: bucket.org_id,
    bucketId: bucket.id,
    key: request.key,
    uploadId,
    parts,
    condition,
    checksums: Object.fromEntries(
      CHECKSUM_ALGORITHMS.flatMap((algorithm) => {
        const given = headerOf(request, `x-amz-checksum-${algorithm}`);
        return given === undefined ? [] : [[algorithm, given.trim()]];
      }),
    ),
  });
  const headers: Record<string, string> = encryptionHeaders(version.encryption);
  if (bucket.versioning) headers['x-amz-version-id'] = version.version_id;
  const checksums: XmlNode = {};
  for (const [algorithm, value] of Object.entries(version.checksums)) {
    if (isChecksumAlgorithm(algorithm)) checksums[`Checksum${algorithm.toUpperCase()}`] = value;
  }
  sendXml(
    request.res,
    200,
    document('CompleteMultipartUploadResult', {
      Location: `/${bucket.name}/${encodeURIComponent(request.key).replace(/%2F/g, '/')}`,
      Bucket: bucket.name,
      Key: request.key,
      ETag: `"${version.etag}"`,
      ...checksums,
    }),
    headers,
  );
};

const abortUpload: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  await request.store.multipart.abort(bucket.id, request.key, request.query.get('uploadId')!);
  request.res.statusCode = 204;
  request.res.end();
};

const listParts: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const uploadId = request.query.get('uploadId')!;
  const upload = await request.store.multipart.upload(bucket.id, request.key, uploadId);
  const max = Math.min(Number(request.query.get('max-parts') ?? 1000) || 1000, 1000);
  const marker = Number(request.query.get('part-number-marker') ?? 0) || 0;
  const parts = await request.store.multipart.parts(uploadId, marker, max + 1);
  const shown = parts.slice(0, max);
  const truncated = parts.length > max;
  sendXml(
    request.res,
    200,
    document('ListPartsResult', {
      Bucket: bucket.name,
      Key: request.key,
      UploadId: uploadId,
      Initiator: OWNER(bucket),
      Owner: OWNER(bucket),
      StorageClass: 'STANDARD',
      PartNumberMarker: marker,
      NextPartNumberMarker: truncated ? shown[shown.length - 1]!.part_number : undefined,
      MaxParts: max,
      IsTruncated: truncated,
      ChecksumAlgorithm: upload.checksum_algorithm?.toUpperCase() ?? undefined,
      Part: shown.map((part) => ({
        PartNumber: part.part_number,
        LastModified: part.last_modified.toISOString(),
        ETag: `"${part.etag}"`,
        Size: part.size_bytes,
        ...Object.fromEntries(
          Object.entries(part.checksums)
            .filter(([algorithm]) => isChecksumAlgorithm(algorithm))
            .map(([algorithm, value]) => [`Checksum${algorithm.toUpperCase()}`, value]),
        ),
      })),
    }),
  );
};

const listUploads: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const prefix = request.query.get('prefix') ?? '';
  const max = Math.min(Number(request.query.get('max-uploads') ?? 1000) || 1000, 1000);
  const keyMarker = request.query.get('key-marker') ?? '';
  const uploadIdMarker = request.query.get('upload-id-marker') ?? '';
  const uploads = await request.store.multipart.uploads(bucket.id, prefix, keyMarker, uploadIdMarker, max + 1);
  const shown = uploads.slice(0, max);
  const truncated = uploads.length > max;
  const last = shown[shown.length - 1];
  sendXml(
    request.res,
    200,
    document('ListMultipartUploadsResult', {
      Bucket: bucket.name,
      KeyMarker: keyMarker,
      UploadIdMarker: uploadIdMarker,
      NextKeyMarker: truncated && last ? last.key : undefined,
      NextUploadIdMarker: truncated && last ? last.upload_id : undefined,
      Prefix: prefix,
      MaxUploads: max,
      IsTruncated: truncated,
      Upload: shown.map((upload) => ({
        Key: upload.key,
        UploadId: upload.upload_id,
        Initiator: OWNER(bucket),
        Owner: OWNER(bucket),
        StorageClass: 'STANDARD',
        Initiated: upload.initiated.toISOString(),
      })),
    }),
  );
};

export const multipartRoutes = {
  listUploads,
  /** The multipart operations on a key (a request with `uploads` or `uploadId`). */
  route(request: S3Request): S3Handler {
    const { method } = request.req;
    if (request.query.has('uploadId')) {
      if (method === 'PUT') return uploadPart;
      if (method === 'POST') return completeUpload;
      if (method === 'DELETE') return abortUpload;
      if (method === 'GET') return listParts;
    } else if (method === 'POST') return createUpload;
    throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
  },
};
