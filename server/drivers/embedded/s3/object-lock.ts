import type { IncomingHttpHeaders } from 'node:http';
import { defaultRetentionFrom, type DefaultRetention, type VersionLock } from '../object-lock.ts';
import type { Retention, ServedBucket, StoredVersion } from '../rows.ts';
import { S3Error, invalidArgument } from './errors.ts';
import { checkedBody } from './config-body.ts';
import { sendXml, settingAudit, type S3Handler, type S3Request } from './request.ts';
import { blocks, document, text } from './xml.ts';

/**
 * Object lock on the S3 endpoint: a bucket's configuration (PutObjectLockConfiguration: turned
 * on for a versioned bucket, and its default retention), a version's retention and legal hold
 * (PUT/GET `?retention`, `?legal-hold`, and the `x-amz-object-lock-*` headers of a write), and
 * `x-amz-bypass-governance-retention` on deletes and retention changes. The store enforces them
 * (../object-lock.ts).
 */
const MODES = new Set(['GOVERNANCE', 'COMPLIANCE']);

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

const malformed = () =>
  new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');
const missingConfiguration = () => new S3Error('InvalidRequest', 400, 'Bucket is missing Object Lock Configuration');
const versionIdOf = (request: S3Request): string | undefined => request.query.get('versionId') || undefined;

/** Whether the request asks to bypass GOVERNANCE retention (every key of the organization may). */
export function bypassesGovernance(request: S3Request): boolean {
  return header(request.req.headers, 'x-amz-bypass-governance-retention')?.trim().toLowerCase() === 'true';
}

/** A date S3 takes for a retention (ISO 8601), in the future. */
function retainUntil(value: string, invalid: () => Error): Date {
  const date = new Date(value.trim());
  if (Number.isNaN(date.getTime())) throw invalid();
  if (date.getTime() <= Date.now()) throw invalidArgument('The retain until date must be in the future!');
  return date;
}

/**
 * The lock a write's new version gets: its `x-amz-object-lock-*` headers (or a POST form's
 * fields), else the bucket's default retention. Refused on a bucket without object lock.
 */
export function writeLock(headers: IncomingHttpHeaders, bucket: ServedBucket): VersionLock | undefined {
  const mode = header(headers, 'x-amz-object-lock-mode');
  const until = header(headers, 'x-amz-object-lock-retain-until-date');
  const hold = header(headers, 'x-amz-object-lock-legal-hold');
  if (mode === undefined && until === undefined && hold === undefined) {
    return bucket.object_lock_enabled ? { retention: defaultRetentionFrom(bucket.object_lock_default, new Date()) } : undefined;
  }
  if (!bucket.object_lock_enabled) throw missingConfiguration();
  const lock: VersionLock = {};
  if (mode !== undefined || until !== undefined) {
    if (mode === undefined || until === undefined)
      throw invalidArgument('x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied');
    if (!MODES.has(mode.trim())) throw invalidArgument('Unknown wormMode directive.', 'x-amz-object-lock-mode', mode);
    lock.retention = {
      mode: mode.trim() as Retention['mode'],
      until: retainUntil(until, () =>
        invalidArgument('The retain until date must be an ISO 8601 date', 'x-amz-object-lock-retain-until-date', until),
      ),
    };
  } else lock.retention = defaultRetentionFrom(bucket.object_lock_default, new Date());
  if (hold !== undefined) {
    if (hold.trim() !== 'ON' && hold.trim() !== 'OFF')
      throw invalidArgument("Legal Hold must be either of 'ON' or 'OFF'", 'x-amz-object-lock-legal-hold', hold);
    lock.legalHold = hold.trim() === 'ON';
  }
  return lock;
}

/** The lock headers of a version, as HEAD and GET answer them. */
export function lockHeaders(version: StoredVersion): Record<string, string> {
  const headers: Record<string, string> = {};
  if (version.lock_mode && version.lock_until) {
    headers['x-amz-object-lock-mode'] = version.lock_mode;
    headers['x-amz-object-lock-retain-until-date'] = version.lock_until.toISOString();
  }
  if (version.legal_hold) headers['x-amz-object-lock-legal-hold'] = 'ON';
  return headers;
}

function parseDefaultRetention(xml: string): DefaultRetention | null {
  const rule = blocks(xml, 'Rule')[0];
  if (rule === undefined) return null;
  const retention = blocks(rule, 'DefaultRetention')[0];
  if (retention === undefined) throw malformed();
  const mode = text(retention, 'Mode');
  const days = text(retention, 'Days');
  const years = text(retention, 'Years');
  if (mode === undefined || !MODES.has(mode)) throw malformed();
  if ((days === undefined) === (years === undefined)) throw malformed();
  const raw = (days ?? years)!;
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || value <= 0 || (days !== undefined ? value > 36_500 : value > 100))
    throw new S3Error('InvalidRetentionPeriod', 400, 'Default retention period must be a positive integer value.');
  return days !== undefined ? { mode: mode as Retention['mode'], days: value } : { mode: mode as Retention['mode'], years: value };
}

const putObjectLockConfiguration: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const xml = await checkedBody(request);
  if (!/<(?:\w+:)?ObjectLockConfiguration[\s>]/.test(xml) || text(xml, 'ObjectLockEnabled') !== 'Enabled') throw malformed();
  const rule = parseDefaultRetention(xml);
  if (!bucket.object_lock_enabled && !(await request.store.objectLock.enable(bucket.id)))
    throw new S3Error('InvalidBucketState', 409, 'Object Lock configuration cannot be enabled on a bucket whose versioning is not enabled');
  const before = bucket.object_lock_enabled ? { enabled: true, default_retention: bucket.object_lock_default } : null;
  const after = { enabled: true, default_retention: rule };
  await request.store.settings.setDefaultRetention(bucket.id, rule, settingAudit(request, bucket, 'object_lock', before, after));
  request.res.statusCode = 200;
  request.res.end();
};

const getObjectLockConfiguration: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  if (!bucket.object_lock_enabled)
    throw new S3Error('ObjectLockConfigurationNotFoundError', 404, 'Object Lock configuration does not exist for this bucket', {
      BucketName: bucket.name,
    });
  const rule = bucket.object_lock_default;
  sendXml(
    request.res,
    200,
    document('ObjectLockConfiguration', {
      ObjectLockEnabled: 'Enabled',
      Rule: rule ? { DefaultRetention: { Mode: rule.mode, Days: rule.days, Years: rule.years } } : undefined,
    }),
  );
};

/** The object's bucket, which must have object lock (S3 answers 400 InvalidRequest otherwise). */
async function lockedBucket(request: S3Request): Promise<ServedBucket> {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  if (!bucket.object_lock_enabled) throw missingConfiguration();
  return bucket;
}

/** The version a retention or legal hold read is about (NoSuchKey, NoSuchVersion, or 405 for a delete marker). */
async function lockedVersion(request: S3Request, bucket: ServedBucket): Promise<StoredVersion> {
  const versionId = versionIdOf(request);
  const version = await request.store.objects.version(bucket.id, request.key, versionId);
  if (!version || (version.delete_marker && versionId === undefined)) {
    if (versionId !== undefined)
      throw new S3Error('NoSuchVersion', 404, 'The specified version does not exist.', { Key: request.key, VersionId: versionId });
    throw new S3Error('NoSuchKey', 404, 'The specified key does not exist.', { Key: request.key });
  }
  if (version.delete_marker) throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
  return version;
}

const putObjectRetention: S3Handler = async (request) => {
  const bucket = await lockedBucket(request);
  const xml = await checkedBody(request);
  if (!/<(?:\w+:)?Retention[\s>]/.test(xml)) throw malformed();
  const mode = text(xml, 'Mode');
  const until = text(xml, 'RetainUntilDate');
  let retention: Retention | null = null;
  if (mode !== undefined || until !== undefined) {
    if (mode === undefined || until === undefined || !MODES.has(mode)) throw malformed();
    retention = { mode: mode as Retention['mode'], until: retainUntil(until, malformed) };
  }
  await request.store.objectLock.setRetention(bucket.id, request.key, versionIdOf(request), retention, {
    bypassGovernance: bypassesGovernance(request),
  });
  request.res.statusCode = 200;
  request.res.end();
};

const getObjectRetention: S3Handler = async (request) => {
  const version = await lockedVersion(request, await lockedBucket(request));
  if (!version.lock_mode || !version.lock_until)
    throw new S3Error('NoSuchObjectLockConfiguration', 404, 'The specified object does not have a ObjectLock configuration');
  sendXml(request.res, 200, document('Retention', { Mode: version.lock_mode, RetainUntilDate: version.lock_until.toISOString() }));
};

const putObjectLegalHold: S3Handler = async (request) => {
  const bucket = await lockedBucket(request);
  const xml = await checkedBody(request);
  const status = text(xml, 'Status');
  if (!/<(?:\w+:)?LegalHold[\s>]/.test(xml) || (status !== 'ON' && status !== 'OFF')) throw malformed();
  await request.store.objectLock.setLegalHold(bucket.id, request.key, versionIdOf(request), status === 'ON');
  request.res.statusCode = 200;
  request.res.end();
};

const getObjectLegalHold: S3Handler = async (request) => {
  const version = await lockedVersion(request, await lockedBucket(request));
  sendXml(request.res, 200, document('LegalHold', { Status: version.legal_hold ? 'ON' : 'OFF' }));
};

export const objectLockRoutes = {
  bucket: { GET: getObjectLockConfiguration, PUT: putObjectLockConfiguration },
  retention: { GET: getObjectRetention, PUT: putObjectRetention },
  legalHold: { GET: getObjectLegalHold, PUT: putObjectLegalHold },
};
