import { DomainError } from '../../../core/errors.ts';
import { StoreRefusal } from '../refusals.ts';
import type { StoredVersion } from '../rows.ts';
import { OBJECT_OWNERSHIPS, OWNER_DISPLAY, aclOfHeaders, aclOfRequest, assertAclsTaken, assertNotBlocked, sendAcl } from './acl.ts';
import { S3Error, invalidArgument, noSuchBucket, notImplemented } from './errors.ts';
import { BUCKET_SUB_RESOURCES, subResourceOf, type BucketSubResource } from './sub-resources.ts';
import { multipartRoutes } from './multipart-handlers.ts';
import { useOf } from './policy-actions.ts';
import { bucketPolicyRoutes } from './policy-handlers.ts';
import { bucketCorsRoutes } from './cors.ts';
import { bucketEncryptionRoutes } from './encryption.ts';
import { bucketLifecycleRoutes } from './lifecycle.ts';
import { bypassesGovernance, objectLockRoutes } from './object-lock.ts';
import type { PlatformBucket } from './platform-port.ts';
import {
  actorOf,
  checkedSmallBody,
  clearingBucketSetting,
  headerOf,
  sendXml,
  settingAudit,
  type S3Handler,
  type S3Request,
} from './request.ts';
import { MAX_BUCKET_TAGS, tagSetElement, tagsOfDocument } from './tagging.ts';
import { S3_NAMESPACE, blocks, document, element, escapeXml, malformedXml, text, type XmlNode } from './xml.ts';

/** The last code point: a marker past every key that starts with a given prefix. */
const PAST_PREFIX = '\u{10FFFF}';

/**
 * ListBuckets: the organization's served buckets in name order, a page at a time when asked
 * (max-buckets, continuation-token; prefix), as S3 pages them.
 */
const listBuckets: S3Handler = async (request) => {
  const prefix = request.query.get('prefix') ?? '';
  const rawMax = request.query.get('max-buckets');
  if (rawMax !== null && (!/^\d+$/.test(rawMax) || Number(rawMax) < 1 || Number(rawMax) > 10_000))
    throw invalidArgument('max-buckets must be an integer from 1 to 10000', 'max-buckets', rawMax);
  const max = rawMax === null ? Infinity : Number(rawMax);
  const continuation = request.query.get('continuation-token');
  const after = continuation === null ? '' : token.decode(continuation);
  const matching = (await request.access.buckets(request.caller))
    .filter((bucket) => bucket.name.startsWith(prefix) && bucket.name > after)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  const page = matching.slice(0, max);
  sendXml(
    request.res,
    200,
    document('ListAllMyBucketsResult', {
      Owner: { ID: request.caller.orgId, DisplayName: OWNER_DISPLAY },
      Buckets: { Bucket: page.map((bucket) => ({ Name: bucket.name, CreationDate: bucket.created_at.toISOString() })) },
      ...(matching.length > page.length ? { ContinuationToken: token.encode(page[page.length - 1]!.name) } : {}),
      ...(request.query.has('prefix') ? { Prefix: prefix } : {}),
    }),
  );
};

const headBucket: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  request.res.statusCode = 200;
  request.res.setHeader('x-amz-bucket-region', request.region);
  // RGW's read-stats extension: what the bucket holds (every version and delete marker), as its usage counts it.
  if (request.query.get('read-stats') === 'true') {
    const usage = await request.store.objects.bucketUsage(bucket.id);
    request.res.setHeader('X-RGW-Object-Count', String(usage.objects));
    request.res.setHeader('X-RGW-Bytes-Used', String(usage.bytes));
  }
  request.res.end();
};

const getBucketLocation: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  // S3 reports us-east-1 as an empty constraint, unless the bucket was created naming it (as RGW answers).
  const location = bucket.location ?? (request.region === 'us-east-1' ? '' : request.region);
  sendXml(
    request.res,
    200,
    document('LocationConstraint', {}).replace('</LocationConstraint>', `${escapeXml(location)}</LocationConstraint>`),
  );
};

/** S3's three states: never configured (no status), Enabled, or Suspended (off since, its kept versions staying). */
const getBucketVersioning: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const status = bucket.versioning ? 'Enabled' : bucket.versioning_configured ? 'Suspended' : undefined;
  sendXml(request.res, 200, document('VersioningConfiguration', { Status: status }));
};

function maxKeys(request: S3Request): number {
  const raw = request.query.get('max-keys');
  // Written out in full: an empty value is absent, a number is at most 1000.
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
  // Nothing asked for, nothing left out: S3 answers max-keys=0 with an empty page that is not truncated.
  if (options.max === 0) return { items, prefixes, truncated: false, next: after };
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
  /** A token this endpoint gave; an empty one starts at the beginning, as S3's does. */
  decode: (value: string) => {
    if (value === '') return '';
    const decoded = Buffer.from(value, 'base64url').toString('utf8');
    if (Buffer.from(decoded, 'utf8').toString('base64url') !== value || decoded.includes('\u0000'))
      throw invalidArgument('The continuation token provided is incorrect', 'continuation-token', value);
    return decoded;
  },
};

const objectEntry = (version: StoredVersion, encode: (value: string) => string, owner: XmlNode | undefined): XmlNode => ({
  Key: encode(version.key),
  LastModified: version.last_modified.toISOString(),
  ETag: `"${version.etag ?? ''}"`,
  Size: version.size_bytes,
  ...(owner ? { Owner: owner } : {}),
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
  // RGW's allow-unordered: any order will do, and this one is; with a delimiter RGW refuses it, and so does this.
  if (request.query.get('allow-unordered') === 'true' && delimiter !== '')
    throw invalidArgument('allow-unordered cannot be used with a delimiter', 'allow-unordered', 'true');
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
  // With encoding-type=url, V2 encodes the prefix it gives back; V1 does not (S3, and the SDKs that decode answers).
  const common = {
    Name: bucket.name,
    Prefix: v2 ? encode(prefix) : prefix,
  };
  // V1 names each object's owner; V2 only when asked (fetch-owner=true).
  const owner = !v2 || request.query.get('fetch-owner') === 'true' ? { ID: bucket.org_id, DisplayName: OWNER_DISPLAY } : undefined;
  const contents = page.items.map((item) => objectEntry(item, encode, owner));
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
  outer: for (; max > 0;) {
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
      ? { Owner: { ID: bucket.org_id, DisplayName: OWNER_DISPLAY } }
      : {
          ETag: `"${version.etag ?? ''}"`,
          Size: version.size_bytes,
          StorageClass: 'STANDARD',
          Owner: { ID: bucket.org_id, DisplayName: OWNER_DISPLAY },
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
  const xml = await checkedSmallBody(request);
  const quiet = text(xml, 'Quiet') === 'true';
  // A key or version id XML cannot carry (`&#0;`) makes the whole document malformed (xml.ts).
  const objects = blocks(xml, 'Object').map((block) => ({ key: text(block, 'Key') ?? '', versionId: text(block, 'VersionId') }));
  if (objects.length === 0 || objects.length > 1000) throw malformedXml();
  const deleted: XmlNode[] = [];
  const errors: XmlNode[] = [];
  for (const object of objects) {
    try {
      // The policy judges each key's delete (a Deny may name some keys only).
      if (
        !(await request.access.allows(
          bucket,
          useOf(request, object.versionId ? 's3:DeleteObjectVersion' : 's3:DeleteObject', object.key, object.versionId || undefined),
        ))
      )
        throw new S3Error('AccessDenied', 403, 'Access Denied');
      const outcome = await request.store.objects.deleteObject(bucket.org_id, bucket.id, object.key, object.versionId || undefined, {
        bypassGovernance: bypassesGovernance(request) && bucket.org_id === request.caller.orgId,
      });
      if (quiet) continue;
      deleted.push({
        Key: object.key,
        VersionId: object.versionId || undefined,
        DeleteMarker: outcome.deleteMarker ? true : undefined,
        DeleteMarkerVersionId: outcome.deleteMarker && !object.versionId ? outcome.versionId : undefined,
      });
    } catch (error) {
      // The store's refusals are S3's own errors; anything else fails the whole request.
      if (!(error instanceof StoreRefusal) && !(error instanceof S3Error)) throw error;
      errors.push({ Key: object.key, VersionId: object.versionId || undefined, Code: error.code, Message: error.message });
    }
  }
  sendXml(request.res, 200, document('DeleteResult', { Deleted: deleted, Error: errors }));
};

/** How long CreateBucket and DeleteBucket wait for their operation before answering 503 (a retry waits again). */
const BUCKET_CHANGE_WAIT_MS = 20_000;

/** S3's answer for the platform's refusal of a bucket change (the API's problem codes). */
function s3ErrorOf(error: DomainError, bucket: string): S3Error {
  switch (error.code) {
    case 'validation_failed':
      return new S3Error('InvalidBucketName', 400, 'The specified bucket is not valid.', { BucketName: bucket });
    case 'bucket_name_taken':
      return new S3Error(
        'BucketAlreadyOwnedByYou',
        409,
        'Your previous request to create the named bucket succeeded and you already own it.',
        {
          BucketName: bucket,
        },
      );
    case 'bucket_limit_reached':
      return new S3Error('TooManyBuckets', 400, `You have attempted to create more buckets than allowed. ${error.detail}`);
    case 'bucket_not_empty':
      return new S3Error('BucketNotEmpty', 409, 'The bucket you tried to delete is not empty', { BucketName: bucket });
    case 'not_found':
      return noSuchBucket(bucket);
  }
  switch (error.kind) {
    case 'unavailable':
      return new S3Error('ServiceUnavailable', 503, 'Please reduce your request rate.', {}, { 'Retry-After': '1' });
    case 'forbidden':
      return new S3Error('AccessDenied', 403, error.detail);
    case 'conflict':
      // The bucket is in the middle of another change, or a rule of the organization refuses it (spend budget).
      return new S3Error(
        'OperationAborted',
        409,
        `A conflicting operation is in progress against this resource, or a rule refuses it: ${error.detail}`,
      );
    default:
      return new S3Error('InvalidRequest', 400, error.detail);
  }
}

/** Runs a bucket change through the platform, its refusals answered with S3's errors. */
async function platformChange<T>(bucket: string, change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (error instanceof DomainError) throw s3ErrorOf(error, bucket);
    throw error;
  }
}

const notDoneYet = (what: string) =>
  new S3Error('ServiceUnavailable', 503, `${what} is still in progress; retry the request.`, {}, { 'Retry-After': '1' });

/** Waits (bounded) for a bucket's operation: done, or S3's answer for why it is not. */
async function waitForOperation(request: S3Request, operationId: string | null, what: string): Promise<void> {
  if (operationId === null) return;
  const state = await request.access.platform.settled(request.caller.orgId, operationId, BUCKET_CHANGE_WAIT_MS);
  if (state === 'succeeded') return;
  if (state === 'pending') throw notDoneYet(what);
  throw new S3Error(
    'ServiceUnavailable',
    503,
    `${what} did not complete in the object store (its operation ${state}); retry the request.`,
    {},
    {
      'Retry-After': '1',
    },
  );
}

/** CreateBucket's body, when it has one: its LocationConstraint must be this endpoint's region; the one it names, if any. */
async function assertLocation(request: S3Request): Promise<string | undefined> {
  const body = (await checkedSmallBody(request)).trim();
  if (body === '') return undefined;
  const configuration = blocks(body, 'CreateBucketConfiguration')[0];
  if (configuration === undefined) throw malformedXml();
  const location = text(configuration, 'LocationConstraint');
  if (location === undefined || location === '') return undefined;
  if (location === request.region) return location;
  throw new S3Error(
    'InvalidLocationConstraint',
    400,
    `The specified location-constraint is not valid: this endpoint serves ${request.region}`,
    {
      LocationConstraint: location,
    },
  );
}

/**
 * A CreateBucket of a name the organization already holds, as S3 answers it: in us-east-1 a bucket
 * of one's own is answered 200 again (AWS's legacy behaviour there, which S3 tools expect),
 * elsewhere BucketAlreadyOwnedByYou. A bucket still being created is waited for; a deleted one
 * keeps its name until it is purged (a documented difference: restore it through the API).
 */
async function createExisting(request: S3Request, bucket: PlatformBucket): Promise<void> {
  if (bucket.state === 'creating') await waitForOperation(request, bucket.operationId, 'The creation of this bucket');
  else if (bucket.state === 'soft_deleted')
    throw new S3Error(
      'OperationAborted',
      409,
      `A bucket of this name was deleted; it keeps its name until it is purged${bucket.purgeAfter ? ` after ${bucket.purgeAfter.toISOString()}` : ''}. Restore it through the platform API, or choose another name.`,
      { BucketName: bucket.name },
    );
  else if (bucket.state !== 'active')
    throw new S3Error('OperationAborted', 409, `The bucket is ${bucket.state}; wait for its change, or delete it and create it again.`, {
      BucketName: bucket.name,
    });
  if (request.region !== 'us-east-1')
    throw new S3Error(
      'BucketAlreadyOwnedByYou',
      409,
      'Your previous request to create the named bucket succeeded and you already own it.',
      {
        BucketName: bucket.name,
      },
    );
}

/**
 * CreateBucket: the platform's own bucket creation (name rules, bucket slots, spend budget, audit
 * event, `bucket.create` operation), answered once the bucket is active, so that the client's
 * next request finds it. With `x-amz-bucket-object-lock-enabled: true` it is created versioned and locked.
 */
const createBucket: S3Handler = async (request) => {
  // Object lock needs versioning: such a bucket is created versioned, then locked once the store holds it.
  const objectLock = headerOf(request, 'x-amz-bucket-object-lock-enabled')?.trim().toLowerCase() === 'true';
  const ownership = headerOf(request, 'x-amz-object-ownership')?.trim();
  if (ownership !== undefined && !OBJECT_OWNERSHIPS.includes(ownership))
    throw invalidArgument('Invalid x-amz-object-ownership header', 'x-amz-object-ownership', ownership);
  // Its ACL is checked before anything is made.
  const acl = aclOfHeaders(request, request.caller.orgId);
  const location = await assertLocation(request);
  const name = request.bucketName;
  const existing = await request.access.platform.bucketNamed(request.caller.orgId, name);
  if (existing) {
    await createExisting(request, existing);
    // Asked again with object lock, a bucket without it is not answered as if it had it.
    if (objectLock && !(await request.access.bucket(request.caller, name)).object_lock_enabled)
      throw new S3Error(
        'BucketAlreadyOwnedByYou',
        409,
        'Your previous request to create the named bucket succeeded and you already own it.',
        {
          BucketName: name,
        },
      );
  } else {
    const change = await platformChange(name, () =>
      request.access.platform.createBucket(actorOf(request), { name, versioning: objectLock }),
    );
    await waitForOperation(request, change.operationId, 'The creation of this bucket');
    if (objectLock && !(await request.store.objectLock.enable(change.bucket.id)))
      throw new S3Error(
        'OperationAborted',
        409,
        'The bucket was created, but its versioning changed before its object lock could be turned on.',
        {
          BucketName: name,
        },
      );
    const made = { id: change.bucket.id, org_id: request.caller.orgId };
    if (ownership !== undefined)
      await request.store.objects.setBucketOwnership(made.id, ownership, settingAudit(request, made, 'ownership', null, ownership));
    if (acl !== undefined && acl.length > 0)
      await request.store.objects.setBucketAcl(made.id, acl, settingAudit(request, made, 'acl', null, acl));
    if (location !== undefined) await request.store.objects.setBucketLocation(change.bucket.id, location);
  }
  request.res.statusCode = 200;
  request.res.setHeader('Location', `/${name}`);
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

/** DeleteBucket: the platform's own soft delete (only an empty bucket; audit event, `bucket.delete` operation), answered once done. */
const deleteBucket: S3Handler = async (request) => {
  const name = request.bucketName;
  const existing = await request.access.platform.bucketNamed(request.caller.orgId, name);
  if (existing?.state === 'deleting') {
    await waitForOperation(request, existing.operationId, 'The deletion of this bucket');
  } else {
    // Only a bucket S3 can see is deleted through S3 (a bucket in error is deleted through the API).
    if (existing?.state !== 'active') throw noSuchBucket(name);
    const change = await platformChange(name, () => request.access.platform.deleteBucket(actorOf(request), name));
    await waitForOperation(request, change.operationId, 'The deletion of this bucket');
  }
  request.res.statusCode = 204;
  request.res.end();
};

/** PutBucketVersioning: Enabled or Suspended, the platform's own change of the bucket (with its audit event). */
const putBucketVersioning: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const body = await checkedSmallBody(request);
  const configuration = blocks(body, 'VersioningConfiguration')[0];
  if (configuration === undefined) throw malformedXml();
  const status = text(configuration, 'Status');
  if (status !== 'Enabled' && status !== 'Suspended') throw malformedXml();
  const mfaDelete = text(configuration, 'MfaDelete');
  if (mfaDelete !== undefined && mfaDelete !== 'Disabled') throw notImplemented('MFA delete');
  // Object lock keeps every version: a locked bucket's versioning is never suspended, as S3 refuses it.
  if (status === 'Suspended' && bucket.object_lock_enabled)
    throw new S3Error(
      'InvalidBucketState',
      409,
      'An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.',
    );
  await platformChange(request.bucketName, () =>
    request.access.platform.setBucketVersioning(actorOf(request), request.bucketName, status === 'Enabled'),
  );
  request.res.statusCode = 200;
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

const getBucketTagging: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  if (bucket.tags === null) throw new S3Error('NoSuchTagSet', 404, 'The TagSet does not exist', { BucketName: bucket.name });
  sendXml(
    request.res,
    200,
    `<?xml version="1.0" encoding="UTF-8"?>\n<Tagging xmlns="${S3_NAMESPACE}">${tagSetElement(bucket.tags)}</Tagging>`,
  );
};

const putBucketTagging: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const tags = tagsOfDocument(await checkedSmallBody(request), MAX_BUCKET_TAGS);
  await request.store.objects.setBucketTags(bucket.id, tags, settingAudit(request, bucket, 'tags', bucket.tags, tags));
  request.res.statusCode = 204;
  request.res.end();
};

const deleteBucketTagging = clearingBucketSetting(
  'tags',
  (bucket) => bucket.tags,
  (request, bucketId, audit) => request.store.objects.setBucketTags(bucketId, null, audit),
);

const getBucketAcl: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  sendAcl(request, bucket, bucket.acl);
};

const putBucketAcl: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  assertAclsTaken(request, bucket, true);
  const acl = await aclOfRequest(request, bucket.org_id);
  assertNotBlocked(acl, bucket);
  await request.store.objects.setBucketAcl(bucket.id, acl, settingAudit(request, bucket, 'acl', bucket.acl, acl));
  request.res.statusCode = 200;
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

/** GetBucketOwnershipControls: the ObjectOwnership set on the bucket, if one was. */
const getBucketOwnership: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  if (bucket.ownership === null)
    throw new S3Error('OwnershipControlsNotFoundError', 404, 'The bucket ownership controls were not found', { BucketName: bucket.name });
  sendXml(request.res, 200, document('OwnershipControls', { Rule: { ObjectOwnership: bucket.ownership } }));
};

const putBucketOwnership: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const controls = blocks(await checkedSmallBody(request), 'OwnershipControls')[0];
  const rules = controls === undefined ? [] : blocks(controls, 'Rule');
  const ownership = rules.length === 1 ? text(rules[0]!, 'ObjectOwnership') : undefined;
  if (ownership === undefined || !OBJECT_OWNERSHIPS.includes(ownership)) throw malformedXml();
  await request.store.objects.setBucketOwnership(
    bucket.id,
    ownership,
    settingAudit(request, bucket, 'ownership', bucket.ownership, ownership),
  );
  request.res.statusCode = 200;
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

const deleteBucketOwnership = clearingBucketSetting(
  'ownership',
  (bucket) => bucket.ownership,
  (request, bucketId, audit) => request.store.objects.setBucketOwnership(bucketId, null, audit),
);

/** Bucket settings with modules of their own: encryption, CORS, lifecycle, object lock, policy and public access block. */
const BUCKET_SETTINGS = {
  GET: {
    encryption: bucketEncryptionRoutes.GET,
    cors: bucketCorsRoutes.GET,
    lifecycle: bucketLifecycleRoutes.GET,
    'object-lock': objectLockRoutes.bucket.GET,
    ...bucketPolicyRoutes.GET,
  },
  PUT: {
    encryption: bucketEncryptionRoutes.PUT,
    cors: bucketCorsRoutes.PUT,
    lifecycle: bucketLifecycleRoutes.PUT,
    'object-lock': objectLockRoutes.bucket.PUT,
    ...bucketPolicyRoutes.PUT,
  },
  DELETE: {
    encryption: bucketEncryptionRoutes.DELETE,
    cors: bucketCorsRoutes.DELETE,
    lifecycle: bucketLifecycleRoutes.DELETE,
    ...bucketPolicyRoutes.DELETE,
  },
} satisfies Record<string, Partial<Record<BucketSubResource, S3Handler>>>;

/** The bucket operations offered, by method and sub-resource ('' for none); every other pair is 501. */
const BUCKET_OPERATIONS: Record<string, Partial<Record<BucketSubResource | '', S3Handler>>> = {
  GET: {
    '': listObjects,
    acl: getBucketAcl,
    location: getBucketLocation,
    ownershipControls: getBucketOwnership,
    tagging: getBucketTagging,
    versioning: getBucketVersioning,
    versions: listObjectVersions,
    uploads: multipartRoutes.listUploads,
    ...BUCKET_SETTINGS.GET,
  },
  HEAD: { '': headBucket },
  PUT: {
    '': createBucket,
    acl: putBucketAcl,
    ownershipControls: putBucketOwnership,
    tagging: putBucketTagging,
    versioning: putBucketVersioning,
    ...BUCKET_SETTINGS.PUT,
  },
  POST: { delete: deleteObjects },
  DELETE: { '': deleteBucket, ownershipControls: deleteBucketOwnership, tagging: deleteBucketTagging, ...BUCKET_SETTINGS.DELETE },
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
