import type { ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { isChecksumAlgorithm, runningChecksum } from '../checksums.ts';
import { assertWriteCondition, etagListMatches, type DeleteCondition, type WriteCondition } from '../conditions.ts';
import { hashing, type NativeDigest } from '../hashing.ts';
import type { PutRequest } from '../objects.ts';
import type { WrappingKey } from '../sealing.ts';
import type { Segment, ServedBucket, StoredVersion, Tag } from '../rows.ts';
import { aclOfHeaders, aclOfRequest, assertAclsTaken, assertNotBlocked, sendAcl } from './acl.ts';
import { copySourceKey, encryptionHeaders, readKey, writeEncryption } from './encryption.ts';
import { S3Error, assertStorable, invalidArgument, noSuchKey, notImplemented } from './errors.ts';
import { expirationHeader } from './lifecycle.ts';
import { bypassesGovernance, lockHeaders, writeLock } from './object-lock.ts';
import { useOf } from './policy-actions.ts';
import { checkedSmallBody, sendXml, settingAudit, signedUploadBody, type S3Handler, type S3Request } from './request.ts';
import { MAX_OBJECT_TAGS, tagSetElement, tagsOfDocument, tagsOfHeader } from './tagging.ts';
import { OBJECT_SUB_RESOURCES, subResourceOf } from './sub-resources.ts';
import { S3_NAMESPACE, document, type XmlNode } from './xml.ts';

const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * A header value as the text its client meant: Node reads header bytes as Latin-1, so bytes that
 * are UTF-8 (what S3 clients send for non-ASCII metadata) are read as the text they encode, and
 * given back as that text. Other bytes stay the Latin-1 characters they are.
 */
function headerText(value: string): string {
  // ASCII is the same text either way (nearly every header): nothing to convert.
  if (!NOT_ASCII.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  const utf8 = bytes.toString('utf8');
  return Buffer.from(utf8, 'utf8').equals(bytes) ? utf8 : value;
}

/** S3's limit of user metadata: the x-amz-meta-* names (without the prefix) and values, in bytes. */
const MAX_USER_METADATA_BYTES = 2048;
const USER_METADATA_PREFIX = 'x-amz-meta-';

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

/**
 * The metadata a write stores: x-amz-meta-* (at most 2 KB, S3's MetadataTooLarge past it) and
 * the representation headers. Header values arrive one character per byte, so their length is
 * their size.
 */
export function attributesOf(request: S3Request): { contentType: string | null; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  let metadataBytes = 0;
  for (const [name, value] of Object.entries(request.req.headers)) {
    const metadata = name.startsWith(USER_METADATA_PREFIX);
    // Only what is stored is read: the rest of a request's headers (the signature's, the SDK's) are not.
    if (value === undefined || (!metadata && !STORED_HEADERS.includes(name))) continue;
    const joined = headerText(Array.isArray(value) ? value.join(',') : value);
    if (metadata) metadataBytes += name.length - USER_METADATA_PREFIX.length + Buffer.byteLength(joined);
    headers[name] = joined;
  }
  if (metadataBytes > MAX_USER_METADATA_BYTES)
    throw new S3Error('MetadataTooLarge', 400, 'Your metadata headers exceed the maximum allowed metadata size.', {
      Size: String(metadataBytes),
      MaxSizeAllowed: String(MAX_USER_METADATA_BYTES),
    });
  // aws-chunked is how the body travelled, not how the object is stored.
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && /(^|,)\s*aws-chunked\s*(,|$)/.test(encoding)) {
    const kept = encoding
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '' && part !== 'aws-chunked');
    if (kept.length > 0) headers['content-encoding'] = kept.join(', ');
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

/** The tags of an `x-amz-tagging` header (PutObject, CreateMultipartUpload, CopyObject with REPLACE); none when absent. */
export function taggingOf(request: S3Request): Tag[] {
  const value = header(request, 'x-amz-tagging');
  return value === undefined ? [] : tagsOfHeader(value);
}

/** Whether answers name versions: a bucket whose versioning is on, or suspended (its new versions are `null`). */
const namesVersions = (bucket: ServedBucket) => bucket.versioning || bucket.versioning_configured;

/** The headers of a version as GetObject and HeadObject give them. */
function versionHeaders(bucket: ServedBucket, version: StoredVersion, request: S3Request): Record<string, string> {
  const headers: Record<string, string> = {
    ETag: quoted(version.etag),
    'Last-Modified': httpDate(version.last_modified),
    'Content-Type': version.content_type ?? 'binary/octet-stream',
    'Accept-Ranges': 'bytes',
  };
  if (namesVersions(bucket)) headers['x-amz-version-id'] = version.version_id;
  if (version.tags.length > 0) headers['x-amz-tagging-count'] = String(version.tags.length);
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
async function readableVersion(request: S3Request, bucket: ServedBucket, looked?: StoredVersion | null): Promise<StoredVersion> {
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
    // Said outright, as RGW says it: no delete marker hides the key, there is none.
    throw noSuchKey(request.key, { 'x-amz-delete-marker': 'false' });
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
async function servedVersion(request: S3Request): Promise<{ bucket: ServedBucket; version: StoredVersion }> {
  const [bucket, looked] = await Promise.all([
    request.access.bucket(request.caller, request.bucketName),
    request.store.objects.versionInBucketNamed(request.caller.orgId, request.bucketName, request.key, versionIdParam(request)),
  ]);
  // Another organization's bucket (its policy shares it): the version is looked up in it.
  const version =
    bucket.org_id === request.caller.orgId ? looked : await request.store.objects.version(bucket.id, request.key, versionIdParam(request));
  return { bucket, version: await readableVersion(request, bucket, version) };
}

/** S3's conditional reads: 412 for a failed If-Match/If-Unmodified-Since, 304 for If-None-Match/If-Modified-Since. */
function preconditions(request: S3Request, version: StoredVersion): 'proceed' | 'not-modified' {
  const matches = (list: string) => etagListMatches(list, version.etag);
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

/** One part of a version, as GetObject and HeadObject with `partNumber` give it. */
interface PartOfVersion {
  start: number;
  end: number;
  /** The part's own ETag; a version that was not a multipart upload has only its own. */
  etag: string | null;
  /** How many parts the version has (x-amz-mp-parts-count): only for a multipart upload. */
  partsCount?: number;
}

/**
 * The `partNumber` a read asks for: a part of a multipart upload (its bytes and ETag), or, for an
 * object uploaded whole, part 1 (the whole object). Another number is InvalidPart, as S3 answers.
 */
function partOf(request: S3Request, version: StoredVersion): PartOfVersion | undefined {
  const raw = request.query.get('partNumber');
  if (raw === null) return undefined;
  const number = Number(raw);
  if (!/^\d+$/.test(raw) || number < 1 || number > 10_000)
    throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive', 'partNumber', raw);
  if (header(request, 'range') !== undefined)
    throw new S3Error('InvalidRequest', 400, 'Cannot specify both Range header and partNumber query parameter');
  const multipart = /-\d+$/.test(version.etag ?? '');
  const notSatisfiable = () => new S3Error('InvalidPart', 400, 'The requested partnumber is not satisfiable', { PartNumber: raw });
  if (!multipart) {
    if (number !== 1) throw notSatisfiable();
    return { start: 0, end: version.size_bytes - 1, etag: version.etag };
  }
  const segment = version.segments[number - 1];
  if (!segment) throw notSatisfiable();
  const start = version.segments.slice(0, number - 1).reduce((offset, earlier) => offset + earlier.size, 0);
  return { start, end: start + segment.size - 1, etag: segment.etag ?? version.etag, partsCount: version.segments.length };
}

/** GetObject and HeadObject: the whole version, a byte range, or a part (`partNumber`). */
const readObject: S3Handler = async (request) => {
  const { bucket, version } = await servedVersion(request);
  const customerKey = readKey(request, version);
  const headers = versionHeaders(bucket, version, request);
  const { res } = request;
  const head = request.req.method === 'HEAD';
  if (preconditions(request, version) === 'not-modified') {
    res.statusCode = 304;
    setHeaders(res, { ETag: headers.ETag!, 'Last-Modified': headers['Last-Modified']! });
    res.end();
    return;
  }
  const part = partOf(request, version);
  const range = part ?? rangeOf(request, version.size_bytes);
  const start = range?.start ?? 0;
  const end = range?.end ?? version.size_bytes - 1;
  if (range) {
    // A part of the object: its full-object checksums do not describe these bytes.
    for (const name of Object.keys(headers)) if (name.startsWith('x-amz-checksum-')) delete headers[name];
    headers['Content-Range'] = `bytes ${start}-${end}/${version.size_bytes}`;
  }
  if (part) {
    headers.ETag = quoted(part.etag);
    if (part.partsCount !== undefined) headers['x-amz-mp-parts-count'] = String(part.partsCount);
  }
  // A part of an object uploaded whole is the whole object: answered as such, not as a range.
  const partial = range !== undefined && !(part && part.partsCount === undefined);
  if (part && !partial) delete headers['Content-Range'];
  res.statusCode = partial ? 206 : 200;
  setHeaders(res, headers);
  res.setHeader('Content-Length', String(end - start + 1));
  if (head || end < start) {
    res.end();
    return;
  }
  let served = 0;
  try {
    await request.store.objects.send(version, start, end, res, (bytes) => (served += bytes), { customerKey, pace: request.sendPace });
    res.end();
  } finally {
    // Egress is what left for the client, whether or not it read to the end.
    await request.store.objects.recordEgress(bucket.org_id, served).catch(() => {});
  }
};

/** If-Match / If-None-Match of a write (PutObject, CompleteMultipartUpload), if it has any. */
export function writeConditionOf(request: S3Request): WriteCondition | undefined {
  const ifMatch = header(request, 'if-match');
  const ifNoneMatch = header(request, 'if-none-match');
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  return { ifMatch, ifNoneMatch };
}

/**
 * A write's condition, checked before its body is read (a write bound to fail costs no transfer);
 * the store checks it again as the write commits, under the bucket's lock.
 */
export async function assertEarlyWriteCondition(
  request: S3Request,
  bucket: ServedBucket,
  condition: WriteCondition | undefined,
): Promise<void> {
  if (condition) assertWriteCondition(condition, await request.store.objects.version(bucket.id, request.key, undefined));
}

/** The answer headers of a stored write: its ETag, version, checksums, encryption and expiration. */
function writeHeaders(request: S3Request, bucket: ServedBucket, version: StoredVersion): Record<string, string> {
  const headers: Record<string, string> = {
    ETag: quoted(version.etag),
    ...encryptionHeaders(version.encryption),
    ...expirationHeader(bucket, version, request.store.lifecycle.dayMs),
  };
  // A write names the version it made only while versioning is on (a suspended bucket's is `null`, not said).
  if (bucket.versioning) headers['x-amz-version-id'] = version.version_id;
  for (const [algorithm, value] of Object.entries(version.checksums)) {
    if (isChecksumAlgorithm(algorithm)) headers[`x-amz-checksum-${algorithm}`] = value;
  }
  return headers;
}

const putObject: S3Handler = async (request) => {
  if (header(request, 'x-amz-copy-source') !== undefined) return copyObject(request);
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  assertAclsTaken(request, bucket);
  const attributes = { ...attributesOf(request), acl: aclOfHeaders(request, bucket.org_id) };
  assertNotBlocked(attributes.acl, bucket);
  const tags = taggingOf(request);
  const sealing = writeEncryption(request, bucket);
  const lock = writeLock(request.req.headers, bucket);
  const condition = writeConditionOf(request);
  await assertEarlyWriteCondition(request, bucket, condition);
  const upload = signedUploadBody(request);
  const version = await request.store.objects.putObject({
    orgId: bucket.org_id,
    bucketId: bucket.id,
    key: validKey(request.key),
    ...attributes,
    tags,
    condition,
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
  assertStorable(decoded, 'x-amz-copy-source');
  const slash = decoded.indexOf('/');
  if (slash <= 0 || slash === decoded.length - 1)
    throw invalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey', 'x-amz-copy-source', raw);
  const versionId = queryPart ? (new URLSearchParams(queryPart).get('versionId') ?? undefined) : undefined;
  if (versionId !== undefined) assertStorable(versionId, 'x-amz-copy-source');
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1), versionId };
}

/**
 * The version `x-amz-copy-source` names (CopyObject, UploadPartCopy), checked against the
 * x-amz-copy-source-if-* conditions, as S3 checks them: 412 when one does not hold.
 */
export async function copySourceVersion(request: S3Request): Promise<{
  source: { bucket: string; key: string; versionId: string | undefined };
  sourceBucket: ServedBucket;
  sourceVersion: StoredVersion;
}> {
  const source = copySource(request);
  // The source is read: its bucket's policy judges a GetObject of it.
  const sourceBucket = await request.access.bucket(
    request.caller,
    source.bucket,
    useOf(request, source.versionId === undefined ? 's3:GetObject' : 's3:GetObjectVersion', source.key, source.versionId),
  );
  const sourceVersion = await request.store.objects.version(sourceBucket.id, source.key, source.versionId);
  if (!sourceVersion || sourceVersion.delete_marker) {
    if (source.versionId !== undefined && sourceVersion?.delete_marker)
      throw invalidArgument('The source of a copy request may not specifically refer to a delete marker by version id.');
    if (source.versionId !== undefined)
      throw new S3Error('NoSuchVersion', 404, 'The specified version does not exist.', { Key: source.key, VersionId: source.versionId });
    throw noSuchKey(source.key);
  }
  const ifMatch = header(request, 'x-amz-copy-source-if-match');
  const ifNoneMatch = header(request, 'x-amz-copy-source-if-none-match');
  const ifModifiedSince = header(request, 'x-amz-copy-source-if-modified-since');
  const ifUnmodifiedSince = header(request, 'x-amz-copy-source-if-unmodified-since');
  const lastModified = Math.floor(sourceVersion.last_modified.getTime() / 1000) * 1000;
  const since = (value: string) => Date.parse(value);
  if (
    (ifMatch !== undefined && !etagListMatches(ifMatch, sourceVersion.etag)) ||
    (ifNoneMatch !== undefined && etagListMatches(ifNoneMatch, sourceVersion.etag)) ||
    (ifMatch === undefined && ifUnmodifiedSince !== undefined && lastModified > since(ifUnmodifiedSince)) ||
    (ifNoneMatch === undefined && ifModifiedSince !== undefined && lastModified <= since(ifModifiedSince))
  )
    throw new S3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold');
  return { source, sourceBucket, sourceVersion };
}

async function copyObject(request: S3Request): Promise<void> {
  const { source, sourceBucket, sourceVersion } = await copySourceVersion(request);
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  assertAclsTaken(request, bucket);
  const sourceKey = copySourceKey(request, sourceVersion);
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
  const taggingDirective = (header(request, 'x-amz-tagging-directive') ?? 'COPY').toUpperCase();
  if (taggingDirective !== 'COPY' && taggingDirective !== 'REPLACE')
    throw invalidArgument('Unknown tagging directive.', 'x-amz-tagging-directive', taggingDirective);
  const attributes = {
    ...(directive === 'REPLACE' ? attributesOf(request) : { contentType: sourceVersion.content_type, headers: sourceVersion.headers }),
    tags: taggingDirective === 'REPLACE' ? taggingOf(request) : sourceVersion.tags,
    // A copy is a new object: its ACL is what the request asks for, not the source's.
    acl: aclOfHeaders(request, bucket.org_id),
  };
  const shared = sharedSource(sourceVersion, sealing?.wrapping.by, sameObject);
  const version = await request.store.objects.putObject({
    orgId: bucket.org_id,
    bucketId: bucket.id,
    key: validKey(request.key),
    ...attributes,
    size: sourceVersion.size_bytes,
    sealing,
    lock,
    ...(shared
      ? {
          body: { sharedSegment: shared.segment },
          transforms: [],
          digests: () => Promise.resolve({ etag: shared.etag, checksums: shared.checksums }),
        }
      : copiedBytes(request, sourceVersion, sourceKey)),
  });
  const headers: Record<string, string> = encryptionHeaders(version.encryption);
  if (bucket.versioning) headers['x-amz-version-id'] = version.version_id;
  if (namesVersions(sourceBucket)) headers['x-amz-copy-source-version-id'] = sourceVersion.version_id;
  sendXml(
    request.res,
    200,
    document('CopyObjectResult', { ETag: quoted(version.etag), LastModified: version.last_modified.toISOString() }),
    headers,
  );
}

/**
 * The source's one segment, for a copy (CopyObject, or UploadPartCopy of a whole object) to share
 * its file (BlobFiles.share) rather than write its bytes again, when the copy keeps them as they
 * are: an object of one segment whose ETag is the MD5 of its bytes (a multipart object's is not,
 * and its copy's is), sealed as the copy is to be (`sealedBy`: not at all, or under the platform's
 * key; SSE-C bytes are opened and sealed again under the copy's key), and not a copy onto itself
 * (which asks for its bytes to be sealed anew). Its ETag and checksums are the source's: the same bytes.
 */
export function sharedSource(
  source: StoredVersion,
  sealedBy: WrappingKey['by'] | undefined,
  sameObject: boolean,
): { segment: Segment; etag: string; checksums: Record<string, string> } | undefined {
  const [segment, ...more] = source.segments;
  const { etag } = source;
  if (segment === undefined || more.length > 0 || sameObject || etag === null || !/^[0-9a-f]{32}$/.test(etag)) return undefined;
  const sourceSealedBy = segment.sealing?.by;
  if (sourceSealedBy === 'customer' || sourceSealedBy !== sealedBy) return undefined;
  const checksums = Object.fromEntries(Object.entries(source.checksums).filter(([algorithm]) => isChecksumAlgorithm(algorithm)));
  return { segment, etag, checksums };
}

/** The source's bytes read (opened with `sourceKey` when SSE-C), hashed again as the copy writes them: its ETag and the source's checksums, one pass each. */
function copiedBytes(
  request: S3Request,
  source: StoredVersion,
  sourceKey: Buffer | undefined,
): Pick<PutRequest, 'body' | 'transforms' | 'digests'> {
  const algorithms = Object.keys(source.checksums).filter(isChecksumAlgorithm);
  const native = new Set<NativeDigest>(['md5']);
  const scripted = new Map<string, ReturnType<typeof runningChecksum>>();
  for (const algorithm of algorithms) {
    if (algorithm === 'crc32' || algorithm === 'sha1' || algorithm === 'sha256') native.add(algorithm);
    else scripted.set(algorithm, runningChecksum(algorithm));
  }
  const hashes = hashing(native, source.size_bytes);
  const observer = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      for (const checksum of scripted.values()) checksum.update(chunk);
      callback(null, chunk);
    },
  });
  return {
    body: request.store.objects.read(source, 0, source.size_bytes - 1, sourceKey),
    // Not paced while the API is busy, though a copy costs a read and a write: a copy answers only
    // once it is done, and a paced one of a large object would outlast clients' read timeouts
    // (the AWS CLI's 60 s) with nothing sent meanwhile.
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
  };
}

/** DeleteObject's conditions (If-Match, x-amz-if-match-last-modified-time, x-amz-if-match-size), if any. */
function deleteConditionOf(request: S3Request): DeleteCondition | undefined {
  const ifMatch = header(request, 'if-match');
  const lastModified = header(request, 'x-amz-if-match-last-modified-time');
  const size = header(request, 'x-amz-if-match-size');
  if (ifMatch === undefined && lastModified === undefined && size === undefined) return undefined;
  const condition: DeleteCondition = { ifMatch };
  if (lastModified !== undefined) {
    const time = Date.parse(lastModified);
    if (Number.isNaN(time))
      throw invalidArgument('Invalid x-amz-if-match-last-modified-time', 'x-amz-if-match-last-modified-time', lastModified);
    condition.lastModified = new Date(time);
  }
  if (size !== undefined) {
    if (!/^\d+$/.test(size.trim())) throw invalidArgument('Invalid x-amz-if-match-size', 'x-amz-if-match-size', size);
    condition.size = Number(size);
  }
  return condition;
}

const deleteObject: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const outcome = await request.store.objects.deleteObject(bucket.org_id, bucket.id, request.key, versionIdParam(request), {
    // Only the bucket's own organization may bypass its governance retention.
    bypassGovernance: bypassesGovernance(request) && bucket.org_id === request.caller.orgId,
    condition: deleteConditionOf(request),
  });
  const { res } = request;
  res.statusCode = 204;
  if (outcome.deleteMarker) res.setHeader('x-amz-delete-marker', 'true');
  if (namesVersions(bucket) && outcome.versionId !== undefined) res.setHeader('x-amz-version-id', outcome.versionId);
  res.end();
};

const versionIdHeader = (bucket: ServedBucket, version: { version_id: string }): Record<string, string> =>
  namesVersions(bucket) ? { 'x-amz-version-id': version.version_id } : {};

const getObjectTagging: S3Handler = async (request) => {
  const { bucket, version } = await servedVersion(request);
  sendXml(
    request.res,
    200,
    `<?xml version="1.0" encoding="UTF-8"?>\n<Tagging xmlns="${S3_NAMESPACE}">${tagSetElement(version.tags)}</Tagging>`,
    versionIdHeader(bucket, version),
  );
};

/** PutObjectTagging and DeleteObjectTagging: the version's tags replaced (its bytes and metadata untouched). */
const setObjectTagging =
  (tagsOf: (request: S3Request) => Promise<Tag[]>, status: number): S3Handler =>
  async (request) => {
    const bucket = await request.access.bucket(request.caller, request.bucketName);
    const tags = await tagsOf(request);
    const versionId = await request.store.objects.setTags(bucket.id, request.key, versionIdParam(request), tags);
    const { res } = request;
    res.statusCode = status;
    setHeaders(res, versionIdHeader(bucket, { version_id: versionId }));
    res.setHeader('Content-Length', '0');
    res.end();
  };

const putObjectTagging = setObjectTagging(async (request) => tagsOfDocument(await checkedSmallBody(request), MAX_OBJECT_TAGS), 200);
const deleteObjectTagging = setObjectTagging(async () => [], 204);

const getObjectAcl: S3Handler = async (request) => {
  const { bucket, version } = await servedVersion(request);
  sendAcl(request, bucket, version.acl, versionIdHeader(bucket, version));
};

const putObjectAcl: S3Handler = async (request) => {
  const { bucket, version } = await servedVersion(request);
  assertAclsTaken(request, bucket, true);
  const acl = await aclOfRequest(request, bucket.org_id);
  assertNotBlocked(acl, bucket);
  // The object's ACL is recorded on its bucket's trail, naming the object (S3's ACL is what makes one public).
  const object = (grants: unknown) => ({ key: request.key, version_id: version.version_id, grants });
  await request.store.objects.setAcl(
    bucket.id,
    request.key,
    version.version_id,
    acl,
    settingAudit(request, bucket, 'object_acl', object(version.acl), object(acl)),
  );
  request.res.statusCode = 200;
  setHeaders(request.res, versionIdHeader(bucket, version));
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

/** The attributes GetObjectAttributes can be asked for. */
const OBJECT_ATTRIBUTES = new Set(['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize']);

/** `<ChecksumX>` elements of checksums as stored (lower-case algorithm names). */
const checksumElements = (checksums: Record<string, string> | undefined): XmlNode =>
  Object.fromEntries(
    Object.entries(checksums ?? {})
      .filter(([algorithm]) => isChecksumAlgorithm(algorithm))
      .map(([algorithm, value]) => [`Checksum${algorithm.toUpperCase()}`, value]),
  );

/**
 * GetObjectAttributes: what x-amz-object-attributes asks for of a version, without its bytes; a
 * multipart upload's parts a page at a time (x-amz-max-parts, x-amz-part-number-marker).
 */
const getObjectAttributes: S3Handler = async (request) => {
  const asked = (header(request, 'x-amz-object-attributes') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (asked.length === 0 || asked.some((name) => !OBJECT_ATTRIBUTES.has(name)))
    throw invalidArgument('Invalid attribute name specified.', 'x-amz-object-attributes', header(request, 'x-amz-object-attributes') ?? '');
  const { bucket, version } = await servedVersion(request);
  const wanted = new Set(asked);
  const body: XmlNode = {};
  if (wanted.has('ETag')) body.ETag = version.etag ?? '';
  const checksums = checksumElements(version.checksums);
  if (wanted.has('Checksum') && Object.keys(checksums).length > 0)
    body.Checksum = { ...checksums, ChecksumType: version.checksums.type ?? 'FULL_OBJECT' };
  const multipart = /-\d+$/.test(version.etag ?? '');
  if (wanted.has('ObjectParts') && multipart) {
    const numberOf = (name: string, fallback: number, most: number) => {
      const raw = header(request, name);
      if (raw === undefined) return fallback;
      if (!/^\d+$/.test(raw.trim())) throw invalidArgument(`Invalid ${name}`, name, raw);
      return Math.min(Number(raw), most);
    };
    const maxParts = numberOf('x-amz-max-parts', 1000, 1000);
    const marker = numberOf('x-amz-part-number-marker', 0, 10_000);
    const parts = version.segments.map((segment, index) => ({ number: index + 1, segment })).filter((part) => part.number > marker);
    const shown = parts.slice(0, maxParts);
    body.ObjectParts = {
      // The SDKs' TotalPartsCount, whose XML element is PartsCount.
      PartsCount: version.segments.length,
      PartNumberMarker: marker,
      NextPartNumberMarker: shown.length > 0 ? shown[shown.length - 1]!.number : marker,
      MaxParts: maxParts,
      IsTruncated: parts.length > shown.length,
      Part: shown.map(({ number, segment }) => ({ PartNumber: number, Size: segment.size, ...checksumElements(segment.checksums) })),
    };
  }
  if (wanted.has('StorageClass')) body.StorageClass = 'STANDARD';
  if (wanted.has('ObjectSize')) body.ObjectSize = version.size_bytes;
  sendXml(request.res, 200, document('GetObjectAttributesResponse', body), {
    'Last-Modified': httpDate(version.last_modified),
    ...(namesVersions(bucket) ? { 'x-amz-version-id': version.version_id } : {}),
  });
};

type ObjectSubResource = (typeof OBJECT_SUB_RESOURCES)[number];

/**
 * The object operations offered, by method and sub-resource ('' for none; `partNumber` alone is
 * a read of one part). Every other pair is 501 NotImplemented and never touches the object.
 */
const OBJECT_OPERATIONS: Record<string, Partial<Record<ObjectSubResource | '', S3Handler>>> = {
  GET: { '': readObject, partNumber: readObject, tagging: getObjectTagging, acl: getObjectAcl, attributes: getObjectAttributes },
  HEAD: { '': readObject, partNumber: readObject },
  PUT: { '': putObject, tagging: putObjectTagging, acl: putObjectAcl },
  DELETE: { '': deleteObject, tagging: deleteObjectTagging },
  // POST on an object is a sub-resource's (restore, select) or a multipart upload's (routed before this).
  POST: {},
};

export const objectRoutes = {
  route(request: S3Request): S3Handler {
    const operations = OBJECT_OPERATIONS[request.req.method ?? ''];
    if (!operations) throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
    const subResource = subResourceOf(request, OBJECT_SUB_RESOURCES) ?? '';
    const handler = operations[subResource];
    if (handler) return handler;
    if (subResource === '') throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
    throw notImplemented(`The ${subResource} sub-resource of an object with ${request.req.method}`);
  },
};
