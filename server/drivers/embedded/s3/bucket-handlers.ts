import { createHash } from 'node:crypto';
import { StoreRefusal } from '../refusals.ts';
import type { StoredBucket, StoredVersion } from '../rows.ts';
import { S3Error, invalidArgument, notImplemented } from './errors.ts';
import { BUCKET_SUB_RESOURCES, subResourceOf, type BucketSubResource } from './sub-resources.ts';
import { multipartRoutes } from './multipart-handlers.ts';
import { bucketCorsRoutes } from './cors.ts';
import { bucketEncryptionRoutes } from './encryption.ts';
import { bucketLifecycleRoutes } from './lifecycle.ts';
import { bypassesGovernance, objectLockRoutes } from './object-lock.ts';
import { sendXml, smallBody, type S3Handler, type S3Request } from './request.ts';
import { blocks, document, element, text, type XmlNode } from './xml.ts';

const OWNER_DISPLAY = 'cloud-platform';
/** The last code point: a marker past every key that starts with a given prefix. */
const PAST_PREFIX = '\u{10FFFF}';

const listBuckets: S3Handler = async (request) => {
  const buckets = await request.access.buckets(request.caller);
  sendXml(
    request.res,
    200,
    document('ListAllMyBucketsResult', {
      Owner: { ID: request.caller.orgId, DisplayName: OWNER_DISPLAY },
      Buckets: { Bucket: buckets.map((bucket) => ({ Name: bucket.name, CreationDate: bucket.created_at.toISOString() })) },
    }),
  );
};

const headBucket: S3Handler = async (request) => {
  await request.access.bucket(request.caller, request.bucketName);
  request.res.statusCode = 200;
  request.res.setHeader('x-amz-bucket-region', request.region);
  request.res.end();
};

const getBucketLocation: S3Handler = async (request) => {
  await request.access.bucket(request.caller, request.bucketName);
  // S3 reports us-east-1 as an empty constraint.
  sendXml(
    request.res,
    200,
    document('LocationConstraint', {}).replace(
      '</LocationConstraint>',
      `${request.region === 'us-east-1' ? '' : request.region}</LocationConstraint>`,
    ),
  );
};

const getBucketVersioning: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  sendXml(request.res, 200, document('VersioningConfiguration', { Status: bucket.versioning ? 'Enabled' : undefined }));
};

function maxKeys(request: S3Request): number {
  const raw = request.query.get('max-keys');
  if (raw === null || raw === '') return 1000;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value))
    throw invalidArgument('Provided max-keys not an integer or within integer range', 'max-keys', raw);
  return Math.min(value, 1000);
}

/** encoding-type=url: keys and prefixes in the answer are URL-encoded (the AWS CLI asks for it). */
function encoderOf(request: S3Request): (value: string) => string {
  const encoding = request.query.get('encoding-type');
  if (encoding === null) return (value) => value;
  if (encoding !== 'url') throw invalidArgument('Invalid Encoding Method specified in Request', 'encoding-type', encoding);
  return (value) => encodeURIComponent(value).replace(/%2F/g, '/');
}

interface Listed<T> {
  items: T[];
  prefixes: string[];
  truncated: boolean;
  /** Where the next page starts (exclusive). */
  next: string;
}

/**
 * A page of keys in order, folding keys that contain the delimiter after the prefix into common
 * prefixes (each counts once towards `max`). `fetch(after, n)` gives the next rows after `after`.
 */
async function listPage<T extends { key: string }>(
  fetch: (after: string, limit: number) => Promise<T[]>,
  options: { prefix: string; delimiter: string; after: string; max: number },
): Promise<Listed<T>> {
  const items: T[] = [];
  const prefixes: string[] = [];
  let after = options.after;
  let count = 0;
  for (;;) {
    // One more than still wanted: seeing it says whether the listing is truncated.
    const wanted = options.max - count + 1;
    const batch = await fetch(after, wanted);
    let skipped = false;
    for (const row of batch) {
      if (count === options.max) return { items, prefixes, truncated: true, next: after };
      const rest = row.key.slice(options.prefix.length);
      const at = options.delimiter === '' ? -1 : rest.indexOf(options.delimiter);
      count++;
      if (at >= 0) {
        const common = options.prefix + rest.slice(0, at + options.delimiter.length);
        prefixes.push(common);
        // Past every key of the common prefix: fetch again from there.
        after = common + PAST_PREFIX;
        skipped = true;
        break;
      }
      items.push(row);
      after = row.key;
    }
    if (!skipped) return { items, prefixes, truncated: false, next: after };
  }
}

const token = {
  encode: (after: string) => Buffer.from(after, 'utf8').toString('base64url'),
  decode: (value: string) => {
    const decoded = Buffer.from(value, 'base64url').toString('utf8');
    if (value === '' || Buffer.from(decoded, 'utf8').toString('base64url') !== value)
      throw invalidArgument('The continuation token provided is incorrect', 'continuation-token', value);
    return decoded;
  },
};

const objectEntry = (version: StoredVersion, encode: (value: string) => string): XmlNode => ({
  Key: encode(version.key),
  LastModified: version.last_modified.toISOString(),
  ETag: `"${version.etag ?? ''}"`,
  Size: version.size_bytes,
  StorageClass: 'STANDARD',
});

const listObjects: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const v2 = request.query.get('list-type') === '2';
  const prefix = request.query.get('prefix') ?? '';
  const delimiter = request.query.get('delimiter') ?? '';
  const max = maxKeys(request);
  const encode = encoderOf(request);
  const continuation = request.query.get('continuation-token');
  const startAfter = request.query.get('start-after') ?? '';
  const marker = request.query.get('marker') ?? '';
  // A V1 marker that is a common prefix continues past every key under it.
  const after = v2
    ? continuation !== null
      ? token.decode(continuation)
      : startAfter
    : delimiter !== '' && marker.endsWith(delimiter)
      ? marker + PAST_PREFIX
      : marker;
  const page = await listPage((from, limit) => request.store.objects.currentObjects(bucket.id, prefix, from, limit), {
    prefix,
    delimiter,
    after,
    max,
  });
  const common = {
    Name: bucket.name,
    Prefix: encode(prefix),
  };
  const contents = page.items.map((item) => objectEntry(item, encode));
  const commonPrefixes = page.prefixes.map((value) => ({ Prefix: encode(value) }));
  const body = v2
    ? document('ListBucketResult', {
        ...common,
        ...(continuation !== null ? { ContinuationToken: continuation } : {}),
        ...(startAfter !== '' ? { StartAfter: encode(startAfter) } : {}),
        KeyCount: contents.length + commonPrefixes.length,
        MaxKeys: max,
        Delimiter: delimiter === '' ? undefined : encode(delimiter),
        EncodingType: request.query.get('encoding-type') ?? undefined,
        IsTruncated: page.truncated,
        NextContinuationToken: page.truncated ? token.encode(page.next) : undefined,
        Contents: contents,
        CommonPrefixes: commonPrefixes,
      })
    : document('ListBucketResult', {
        ...common,
        Marker: encode(marker),
        NextMarker: page.truncated && delimiter !== '' ? encode(page.next.replace(PAST_PREFIX, '')) : undefined,
        MaxKeys: max,
        Delimiter: delimiter === '' ? undefined : encode(delimiter),
        EncodingType: request.query.get('encoding-type') ?? undefined,
        IsTruncated: page.truncated,
        Contents: contents,
        CommonPrefixes: commonPrefixes,
      });
  sendXml(request.res, 200, body);
};

const listObjectVersions: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const prefix = request.query.get('prefix') ?? '';
  const delimiter = request.query.get('delimiter') ?? '';
  const max = maxKeys(request);
  const encode = encoderOf(request);
  const keyMarker = request.query.get('key-marker') ?? '';
  const versionIdMarker = request.query.get('version-id-marker') ?? '';
  // Versions are fetched one more than asked; a common prefix skips the whole prefix.
  const rows: StoredVersion[] = [];
  const prefixes: string[] = [];
  let afterKey = keyMarker;
  let afterVersion = keyMarker === '' ? '' : versionIdMarker;
  let truncated = false;
  let last: { key: string; versionId: string } | undefined;
  outer: for (;;) {
    const batch = await request.store.objects.versions(bucket.id, prefix, afterKey, afterVersion, max - rows.length - prefixes.length + 1);
    if (batch.length === 0) break;
    for (const version of batch) {
      if (rows.length + prefixes.length === max) {
        truncated = true;
        break outer;
      }
      const rest = version.key.slice(prefix.length);
      const at = delimiter === '' ? -1 : rest.indexOf(delimiter);
      if (at >= 0) {
        const common = prefix + rest.slice(0, at + delimiter.length);
        prefixes.push(common);
        last = { key: common, versionId: '' };
        afterKey = common + PAST_PREFIX;
        afterVersion = '';
        continue outer;
      }
      rows.push(version);
      last = { key: version.key, versionId: version.version_id };
      afterKey = version.key;
      afterVersion = version.version_id;
    }
  }
  const entry = (version: StoredVersion): XmlNode => ({
    Key: encode(version.key),
    VersionId: version.version_id,
    IsLatest: version.is_latest ?? false,
    LastModified: version.last_modified.toISOString(),
    ...(version.delete_marker
      ? { Owner: { ID: request.caller.orgId, DisplayName: OWNER_DISPLAY } }
      : {
          ETag: `"${version.etag ?? ''}"`,
          Size: version.size_bytes,
          StorageClass: 'STANDARD',
          Owner: { ID: request.caller.orgId, DisplayName: OWNER_DISPLAY },
        }),
  });
  // Versions and delete markers keep their order in the listing (S3 interleaves them the same way).
  const body = document('ListVersionsResult', {
    Name: bucket.name,
    Prefix: encode(prefix),
    KeyMarker: encode(keyMarker),
    VersionIdMarker: versionIdMarker,
    NextKeyMarker: truncated && last ? encode(last.key) : undefined,
    NextVersionIdMarker: truncated && last && last.versionId !== '' ? last.versionId : undefined,
    MaxKeys: max,
    Delimiter: delimiter === '' ? undefined : encode(delimiter),
    EncodingType: request.query.get('encoding-type') ?? undefined,
    IsTruncated: truncated,
  }).replace(
    '</ListVersionsResult>',
    `${rows.map((version) => (version.delete_marker ? element('DeleteMarker', entry(version)) : element('Version', entry(version)))).join('')}${prefixes
      .map((value) => element('CommonPrefixes', { Prefix: encode(value) }))
      .join('')}</ListVersionsResult>`,
  );
  sendXml(request.res, 200, body);
};

/** DeleteObjects: up to 1000 keys, each answered on its own; Content-MD5 or a checksum is checked when sent. */
const deleteObjects: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const raw = await smallBody(request.req, request.res);
  const md5 = request.req.headers['content-md5'];
  if (typeof md5 === 'string' && createHash('md5').update(raw).digest('base64') !== md5.trim())
    throw new S3Error('BadDigest', 400, 'The Content-MD5 you specified did not match what we received.');
  if (/^[0-9a-f]{64}$/.test(request.signed.payloadHash) && createHash('sha256').update(raw).digest('hex') !== request.signed.payloadHash)
    throw new S3Error('XAmzContentSHA256Mismatch', 400, 'The provided x-amz-content-sha256 header does not match what was computed.');
  const xml = raw.toString('utf8');
  const quiet = text(xml, 'Quiet') === 'true';
  const objects = blocks(xml, 'Object').map((block) => ({ key: text(block, 'Key') ?? '', versionId: text(block, 'VersionId') }));
  if (objects.length === 0 || objects.length > 1000)
    throw new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');
  const deleted: XmlNode[] = [];
  const errors: XmlNode[] = [];
  for (const object of objects) {
    try {
      const outcome = await request.store.objects.deleteObject(request.caller.orgId, bucket.id, object.key, object.versionId || undefined, {
        bypassGovernance: bypassesGovernance(request),
      });
      if (quiet) continue;
      deleted.push({
        Key: object.key,
        VersionId: object.versionId || undefined,
        DeleteMarker: outcome.deleteMarker ? true : undefined,
        DeleteMarkerVersionId: outcome.deleteMarker && !object.versionId ? outcome.versionId : undefined,
      });
    } catch (error) {
      // A refusal keeps its own code (a version kept by its object lock is AccessDenied).
      const code = error instanceof StoreRefusal || error instanceof S3Error ? error.code : 'InternalError';
      errors.push({ Key: object.key, VersionId: object.versionId || undefined, Code: code, Message: (error as Error).message });
    }
  }
  sendXml(request.res, 200, document('DeleteResult', { Deleted: deleted, Error: errors }));
};

/** Buckets are created through the platform API (quotas, billing, audit): S3's CreateBucket is refused. */
const putBucket: S3Handler = async (request) => {
  let bucket: StoredBucket | undefined;
  try {
    bucket = await request.access.bucket(request.caller, request.bucketName);
  } catch {
    bucket = undefined;
  }
  if (bucket && !request.query.has('versioning'))
    throw new S3Error('BucketAlreadyOwnedByYou', 409, 'Your previous request to create the named bucket succeeded and you already own it.');
  if (request.query.has('versioning'))
    throw notImplemented('Changing versioning (set it when creating the bucket through the platform API)');
  throw new S3Error('AccessDenied', 403, 'Buckets are created through the platform API (POST /v1/orgs/{org}/s3/buckets), not through S3');
};

const deleteBucket: S3Handler = async (request) => {
  await request.access.bucket(request.caller, request.bucketName);
  throw new S3Error(
    'AccessDenied',
    403,
    'Buckets are deleted through the platform API (DELETE /v1/orgs/{org}/s3/buckets/{bucket_id}), not through S3',
  );
};

/** Bucket settings with modules of their own: encryption, CORS, lifecycle and object lock. */
const BUCKET_SETTINGS = {
  GET: {
    encryption: bucketEncryptionRoutes.GET,
    cors: bucketCorsRoutes.GET,
    lifecycle: bucketLifecycleRoutes.GET,
    'object-lock': objectLockRoutes.bucket.GET,
  },
  PUT: {
    encryption: bucketEncryptionRoutes.PUT,
    cors: bucketCorsRoutes.PUT,
    lifecycle: bucketLifecycleRoutes.PUT,
    'object-lock': objectLockRoutes.bucket.PUT,
  },
  DELETE: { encryption: bucketEncryptionRoutes.DELETE, cors: bucketCorsRoutes.DELETE, lifecycle: bucketLifecycleRoutes.DELETE },
} satisfies Record<string, Partial<Record<BucketSubResource, S3Handler>>>;

/** The bucket operations offered, by method and sub-resource ('' for none); every other pair is 501. */
const BUCKET_OPERATIONS: Record<string, Partial<Record<BucketSubResource | '', S3Handler>>> = {
  GET: {
    '': listObjects,
    location: getBucketLocation,
    versioning: getBucketVersioning,
    versions: listObjectVersions,
    uploads: multipartRoutes.listUploads,
    ...BUCKET_SETTINGS.GET,
  },
  HEAD: { '': headBucket },
  PUT: { '': putBucket, versioning: putBucket, ...BUCKET_SETTINGS.PUT },
  POST: { delete: deleteObjects },
  DELETE: { '': deleteBucket, ...BUCKET_SETTINGS.DELETE },
};

export const bucketRoutes = {
  listBuckets,
  route(request: S3Request): S3Handler {
    const operations = BUCKET_OPERATIONS[request.req.method ?? ''];
    if (!operations) throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
    const subResource = subResourceOf(request, BUCKET_SUB_RESOURCES) ?? '';
    const handler = operations[subResource];
    if (handler) return handler;
    if (subResource === '') throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
    throw notImplemented(`${request.req.method} on the ${subResource} sub-resource of a bucket`);
  },
};
