import type { ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { isChecksumAlgorithm, runningChecksum } from '../checksums.ts';
import { hashing, type NativeDigest } from '../hashing.ts';
import type { StoredBucket, StoredVersion } from '../rows.ts';
import { copySourceKey, encryptionHeaders, readKey, writeEncryption } from './encryption.ts';
import { S3Error, invalidArgument, noSuchKey } from './errors.ts';
import { expirationHeader } from './lifecycle.ts';
import { bypassesGovernance, lockHeaders, writeLock } from './object-lock.ts';
import { uploadBody } from './payload.ts';
import { sendXml, type S3Handler, type S3Request } from './request.ts';
import { document } from './xml.ts';

/** Headers stored with an object and given back as they were sent. */
const STORED_HEADERS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'];
/** GetObject's `response-*` query parameters: the header each one overrides. */
const RESPONSE_OVERRIDES: Record<string, string> = {
  'response-content-type': 'Content-Type',
  'response-content-language': 'Content-Language',
  'response-expires': 'Expires',
  'response-cache-control': 'Cache-Control',
  'response-content-disposition': 'Content-Disposition',
  'response-content-encoding': 'Content-Encoding',
};

const header = (request: S3Request, name: string): string | undefined => {
  const value = request.req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** The metadata a write stores: x-amz-meta-* and the representation headers. */
export function attributesOf(request: S3Request): { contentType: string | null; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.req.headers)) {
    if (value === undefined) continue;
    if (name.startsWith('x-amz-meta-') || STORED_HEADERS.includes(name)) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  // aws-chunked is how the body travelled, not how the object is stored.
  if (headers['content-encoding']) {
    const kept = headers['content-encoding']
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '' && part !== 'aws-chunked');
    if (kept.length > 0) headers['content-encoding'] = kept.join(',');
    else delete headers['content-encoding'];
  }
  return { contentType: header(request, 'content-type') ?? null, headers };
}

const versionIdParam = (request: S3Request): string | undefined => {
  const value = request.query.get('versionId');
  return value === null || value === '' ? undefined : value;
};

const httpDate = (date: Date): string => date.toUTCString();
const quoted = (etag: string | null): string => `"${etag ?? ''}"`;

/** The headers of a version as GetObject and HeadObject give them. */
function versionHeaders(bucket: StoredBucket, version: StoredVersion, request: S3Request): Record<string, string> {
  const headers: Record<string, string> = {
    ETag: quoted(version.etag),
    'Last-Modified': httpDate(version.last_modified),
    'Content-Type': version.content_type ?? 'binary/octet-stream',
    'Accept-Ranges': 'bytes',
  };
  if (bucket.versioning) headers['x-amz-version-id'] = version.version_id;
  for (const [name, value] of Object.entries(version.headers)) headers[name] = value;
  Object.assign(
    headers,
    encryptionHeaders(version.encryption),
    lockHeaders(version),
    expirationHeader(bucket, version, request.store.lifecycle.dayMs),
  );
  if (header(request, 'x-amz-checksum-mode')?.toUpperCase() === 'ENABLED') {
    for (const [algorithm, value] of Object.entries(version.checksums)) {
      if (isChecksumAlgorithm(algorithm)) headers[`x-amz-checksum-${algorithm}`] = value;
    }
    if (version.checksums.type) headers['x-amz-checksum-type'] = version.checksums.type;
    else if (Object.keys(version.checksums).length > 0) headers['x-amz-checksum-type'] = 'FULL_OBJECT';
  }
  for (const [parameter, name] of Object.entries(RESPONSE_OVERRIDES)) {
    const value = request.query.get(parameter);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

/**
 * The version a read or head is about: S3's answers for a missing key, a missing version, and a
 * delete marker (404 NoSuchKey with x-amz-delete-marker for the latest, 405 when asked by id).
 */
async function readableVersion(request: S3Request, bucket: StoredBucket, looked?: StoredVersion | null): Promise<StoredVersion> {
  const versionId = versionIdParam(request);
  // Looked up by the bucket's name meanwhile (see servedVersion): asked again by id should the
  // name have come to mean another bucket between the two reads.
  const version =
    looked !== undefined && (looked === null || looked.bucket_id === bucket.id)
      ? looked
      : await request.store.objects.version(bucket.id, request.key, versionId);
  if (!version) {
    if (versionId !== undefined)
      throw new S3Error('NoSuchVersion', 404, 'The specified version does not exist.', { Key: request.key, VersionId: versionId });
    throw noSuchKey(request.key);
  }
  if (version.delete_marker) {
    const markerHeaders: Record<string, string> = { 'x-amz-delete-marker': 'true', 'x-amz-version-id': version.version_id };
    if (versionId !== undefined)
      throw new S3Error(
        'MethodNotAllowed',
        405,
        'The specified method is not allowed against this resource.',
        {},
        {
          ...markerHeaders,
          'Last-Modified': httpDate(version.last_modified),
        },
      );
    throw noSuchKey(request.key, markerHeaders);
  }
  return version;
}

/**
 * The served bucket and the version a read is about: the version is looked up (by the bucket's
 * name) while the bucket is checked, rather than after it. A bucket that is not served answers
 * as before, whatever the version lookup found.
 */
async function servedVersion(request: S3Request): Promise<{ bucket: StoredBucket; version: StoredVersion }> {
  const [bucket, looked] = await Promise.all([
    request.access.bucket(request.caller, request.bucketName),
    request.store.objects.versionInBucketNamed(request.caller.orgId, request.bucketName, request.key, versionIdParam(request)),
  ]);
  return { bucket, version: await readableVersion(request, bucket, looked) };
}

/** S3's conditional reads: 412 for a failed If-Match/If-Unmodified-Since, 304 for If-None-Match/If-Modified-Since. */
function preconditions(request: S3Request, version: StoredVersion): 'proceed' | 'not-modified' {
  const etag = version.etag ?? '';
  const matches = (list: string) =>
    list
      .split(',')
      .map((item) => item.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
      .some((item) => item === '*' || item === etag);
  const lastModified = Math.floor(version.last_modified.getTime() / 1000) * 1000;
  const ifMatch = header(request, 'if-match');
  const ifUnmodifiedSince = header(request, 'if-unmodified-since');
  const ifNoneMatch = header(request, 'if-none-match');
  const ifModifiedSince = header(request, 'if-modified-since');
  const failed = () =>
    new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-Match' });
  if (ifMatch !== undefined) {
    if (!matches(ifMatch)) throw failed();
  } else if (ifUnmodifiedSince !== undefined) {
    const since = Date.parse(ifUnmodifiedSince);
    if (!Number.isNaN(since) && lastModified > since) throw failed();
  }
  if (ifNoneMatch !== undefined) {
    if (matches(ifNoneMatch)) return 'not-modified';
  } else if (ifModifiedSince !== undefined) {
    const since = Date.parse(ifModifiedSince);
    if (!Number.isNaN(since) && lastModified <= since) return 'not-modified';
  }
  return 'proceed';
}

/** A single byte range of `bytes=…` (S3 serves one); undefined: the whole object. */
function rangeOf(request: S3Request, size: number): { start: number; end: number } | undefined {
  const range = header(request, 'range');
  if (range === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
  // A malformed or multi-range header is ignored, as S3 does.
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  const unsatisfiable = () =>
    new S3Error(
      'InvalidRange',
      416,
      'The requested range is not satisfiable',
      { RangeRequested: range, ActualObjectSize: String(size) },
      {
        'Content-Range': `bytes */${size}`,
      },
    );
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) throw unsatisfiable();
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size) throw unsatisfiable();
  if (end < start) return undefined;
  return { start, end };
}

function setHeaders(res: ServerResponse, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

const getObject: S3Handler = async (request) => {
  const { bucket, version } = await servedVersion(request);
  const customerKey = readKey(request, version);
  const headers = versionHeaders(bucket, version, request);
  const { res } = request;
  if (preconditions(request, version) === 'not-modified') {
    res.statusCode = 304;
    setHeaders(res, { ETag: headers.ETag!, 'Last-Modified': headers['Last-Modified']! });
    res.end();
    return;
  }
  const range = rangeOf(request, version.size_bytes);
  const start = range?.start ?? 0;
  const end = range?.end ?? version.size_bytes - 1;
  if (range) {
    // A part of the object: its full-object checksums do not describe these bytes.
    for (const name of Object.keys(headers)) if (name.startsWith('x-amz-checksum-')) delete headers[name];
    headers['Content-Range'] = `bytes ${start}-${end}/${version.size_bytes}`;
  }
  res.statusCode = range ? 206 : 200;
  setHeaders(res, headers);
  res.setHeader('Content-Length', String(end - start + 1));
  if (request.req.method === 'HEAD' || end < start) {
    res.end();
    return;
  }
  let served = 0;
  try {
    await request.store.objects.send(version, start, end, res, (bytes) => (served += bytes), customerKey);
    res.end();
  } finally {
    // Egress is what left for the client, whether or not it read to the end.
    await request.store.objects.recordEgress(request.caller.orgId, served).catch(() => {});
  }
};

const headObject: S3Handler = async (request) => {
  const { bucket, version } = await servedVersion(request);
  readKey(request, version);
  const headers = versionHeaders(bucket, version, request);
  const { res } = request;
  if (preconditions(request, version) === 'not-modified') {
    res.statusCode = 304;
    res.end();
    return;
  }
  const range = rangeOf(request, version.size_bytes);
  res.statusCode = range ? 206 : 200;
  setHeaders(res, headers);
  if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${version.size_bytes}`);
  res.setHeader('Content-Length', String(range ? range.end - range.start + 1 : version.size_bytes));
  res.end();
};

/** PutObject's If-None-Match: * (write only when the key has no current object). */
async function assertPutCondition(request: S3Request, bucket: StoredBucket): Promise<void> {
  const ifNoneMatch = header(request, 'if-none-match');
  const ifMatch = header(request, 'if-match');
  if (ifNoneMatch === undefined && ifMatch === undefined) return;
  const current = await request.store.objects.version(bucket.id, request.key, undefined);
  const live = current && !current.delete_marker ? current : null;
  if (ifNoneMatch !== undefined && ifNoneMatch.trim() === '*' && live)
    throw new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', {
      Condition: 'If-None-Match',
    });
  if (ifMatch !== undefined && (!live || ifMatch.trim().replace(/^"|"$/g, '') !== live.etag)) {
    if (!live) throw noSuchKey(request.key);
    throw new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold', {
      Condition: 'If-Match',
    });
  }
}

/** The answer headers of a stored write: its ETag, version, checksums, encryption and expiration. */
function writeHeaders(request: S3Request, bucket: StoredBucket, version: StoredVersion): Record<string, string> {
  const headers: Record<string, string> = {
    ETag: quoted(version.etag),
    ...encryptionHeaders(version.encryption),
    ...expirationHeader(bucket, version, request.store.lifecycle.dayMs),
  };
  if (bucket.versioning) headers['x-amz-version-id'] = version.version_id;
  for (const [algorithm, value] of Object.entries(version.checksums)) {
    if (isChecksumAlgorithm(algorithm)) headers[`x-amz-checksum-${algorithm}`] = value;
  }
  return headers;
}

const putObject: S3Handler = async (request) => {
  if (header(request, 'x-amz-copy-source') !== undefined) return copyObject(request);
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const sealing = writeEncryption(request, bucket);
  const lock = writeLock(request.req.headers, bucket);
  await assertPutCondition(request, bucket);
  const upload = uploadBody(request.req, request.res, request.signed.payloadHash, {
    key: request.signingKey,
    amzDate: request.signed.amzDate,
    scope: request.scope,
    seedSignature: request.signed.signature,
  });
  const version = await request.store.objects.putObject({
    orgId: request.caller.orgId,
    bucketId: bucket.id,
    key: validKey(request.key),
    ...attributesOf(request),
    ...upload,
    sealing,
    lock,
  });
  request.res.statusCode = 200;
  setHeaders(request.res, writeHeaders(request, bucket, version));
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

function validKey(key: string): string {
  if (Buffer.byteLength(key) > 1024) throw new S3Error('KeyTooLongError', 400, 'Your key is too long');
  return key;
}

/** `x-amz-copy-source`: `[/]bucket/key[?versionId=…]`, URL-encoded. */
function copySource(request: S3Request): { bucket: string; key: string; versionId: string | undefined } {
  const raw = header(request, 'x-amz-copy-source')!;
  const [pathPart, queryPart] = raw.split('?', 2) as [string, string | undefined];
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathPart.replace(/^\/+/, ''));
  } catch {
    throw invalidArgument('Invalid copy source encoding', 'x-amz-copy-source', raw);
  }
  const slash = decoded.indexOf('/');
  if (slash <= 0 || slash === decoded.length - 1)
    throw invalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey', 'x-amz-copy-source', raw);
  const versionId = queryPart ? (new URLSearchParams(queryPart).get('versionId') ?? undefined) : undefined;
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1), versionId };
}

async function copyObject(request: S3Request): Promise<void> {
  const source = copySource(request);
  const sourceBucket = await request.access.bucket(request.caller, source.bucket);
  const sourceVersion = await request.store.objects.version(sourceBucket.id, source.key, source.versionId);
  if (!sourceVersion || sourceVersion.delete_marker) {
    if (source.versionId !== undefined && sourceVersion?.delete_marker)
      throw invalidArgument('The source of a copy request may not specifically refer to a delete marker by version id.');
    throw noSuchKey(source.key);
  }
  const ifMatch = header(request, 'x-amz-copy-source-if-match');
  const ifNoneMatch = header(request, 'x-amz-copy-source-if-none-match');
  const stripped = (value: string) => value.trim().replace(/^"|"$/g, '');
  if (
    (ifMatch !== undefined && stripped(ifMatch) !== sourceVersion.etag) ||
    (ifNoneMatch !== undefined && stripped(ifNoneMatch) === sourceVersion.etag)
  )
    throw new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold');
  const sourceKey = copySourceKey(request, sourceVersion);
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const sealing = writeEncryption(request, bucket);
  const lock = writeLock(request.req.headers, bucket);
  const directive = (header(request, 'x-amz-metadata-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE')
    throw invalidArgument('Unknown metadata directive.', 'x-amz-metadata-directive', directive);
  const sameObject = sourceBucket.id === bucket.id && source.key === request.key && source.versionId === undefined;
  // A copy onto itself that asks for an encryption is a change (S3 clients re-encrypt objects this way).
  const asksForEncryption =
    header(request, 'x-amz-server-side-encryption') !== undefined ||
    header(request, 'x-amz-server-side-encryption-customer-algorithm') !== undefined;
  if (sameObject && directive === 'COPY' && !asksForEncryption)
    throw new S3Error(
      'InvalidRequest',
      400,
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  const attributes =
    directive === 'REPLACE' ? attributesOf(request) : { contentType: sourceVersion.content_type, headers: sourceVersion.headers };
  // The copy is hashed again as it is written (ETag and the source's checksums, one pass each).
  const algorithms = Object.keys(sourceVersion.checksums).filter(isChecksumAlgorithm);
  const native = new Set<NativeDigest>(['md5']);
  const scripted = new Map<string, ReturnType<typeof runningChecksum>>();
  for (const algorithm of algorithms) {
    if (algorithm === 'crc32' || algorithm === 'sha1' || algorithm === 'sha256') native.add(algorithm);
    else scripted.set(algorithm, runningChecksum(algorithm));
  }
  const hashes = hashing(native, sourceVersion.size_bytes);
  const observer = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      for (const checksum of scripted.values()) checksum.update(chunk);
      callback(null, chunk);
    },
  });
  const version = await request.store.objects.putObject({
    orgId: request.caller.orgId,
    bucketId: bucket.id,
    key: validKey(request.key),
    ...attributes,
    size: sourceVersion.size_bytes,
    body: request.store.objects.read(sourceVersion, 0, sourceVersion.size_bytes - 1, sourceKey),
    sealing,
    lock,
    transforms: [hashes.transform, observer],
    digests: async () => {
      const digests = await hashes.result();
      return {
        etag: digests.get('md5')!.toString('hex'),
        checksums: Object.fromEntries(
          algorithms.map((algorithm) => [
            algorithm,
            scripted.get(algorithm)?.digest() ?? digests.get(algorithm as NativeDigest)!.toString('base64'),
          ]),
        ),
      };
    },
  });
  const headers: Record<string, string> = encryptionHeaders(version.encryption);
  if (bucket.versioning) headers['x-amz-version-id'] = version.version_id;
  if (sourceBucket.versioning) headers['x-amz-copy-source-version-id'] = sourceVersion.version_id;
  sendXml(
    request.res,
    200,
    document('CopyObjectResult', { ETag: quoted(version.etag), LastModified: version.last_modified.toISOString() }),
    headers,
  );
}

const deleteObject: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const outcome = await request.store.objects.deleteObject(request.caller.orgId, bucket.id, request.key, versionIdParam(request), {
    bypassGovernance: bypassesGovernance(request),
  });
  const { res } = request;
  res.statusCode = 204;
  if (outcome.deleteMarker) res.setHeader('x-amz-delete-marker', 'true');
  if (bucket.versioning && outcome.versionId !== undefined) res.setHeader('x-amz-version-id', outcome.versionId);
  res.end();
};

export const objectRoutes = {
  route(request: S3Request): S3Handler {
    switch (request.req.method) {
      case 'GET':
        return getObject;
      case 'HEAD':
        return headObject;
      case 'PUT':
        return putObject;
      case 'DELETE':
        return deleteObject;
      default:
        throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
    }
  },
};
