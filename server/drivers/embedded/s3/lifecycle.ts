import { randomBytes } from 'node:crypto';
import { expiryOf, ruleScope, type LifecycleRule } from '../lifecycle.ts';
import type { ServedBucket, StoredVersion } from '../rows.ts';
import { S3Error, invalidArgument, notImplemented } from './errors.ts';
import { checkedBody } from './config-body.ts';
import { sendXml, clearingBucketSetting, settingAudit, type S3Handler } from './request.ts';
import { blocks, document, text, type XmlNode } from './xml.ts';

/**
 * Lifecycle configuration on the S3 endpoint (Put/Get/DeleteBucketLifecycleConfiguration): rules
 * that expire current versions (after days, or from a date), noncurrent versions, delete markers
 * left alone and unfinished multipart uploads, for a key prefix and sizes. The store's background
 * run applies them (../lifecycle.ts). Transitions between storage classes are not offered (there
 * is one class), and tag filters not yet: refused, never stored to be ignored.
 */
const MAX_RULES = 1000;

const malformed = () =>
  new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');

/** A positive whole number of an element (S3's InvalidArgument otherwise). */
function positive(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value.trim());
  if (!/^-?\d+$/.test(value.trim()) || number <= 0 || !Number.isSafeInteger(number))
    throw invalidArgument(`'${what}' must be a positive integer`, what, value);
  return number;
}

/** A whole number of an element that may be 0 (object sizes). */
function size(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number))
    throw invalidArgument(`'${what}' must be a non-negative integer`, what, value);
  return number;
}

/** S3 takes an expiration date at midnight UTC, in ISO 8601. */
function midnight(value: string, what: string): string {
  const date = new Date(value.trim());
  if (!/^\d{4}-\d{2}-\d{2}(T00:00:00(\.0+)?(Z|[+-]00:?00))?$/.test(value.trim()) || Number.isNaN(date.getTime()))
    throw invalidArgument(`'${what}' must be at midnight GMT, in ISO 8601 format`, what, value);
  return date.toISOString();
}

/** A rule's block without its Filter (whose Prefix is not the rule's). */
const withoutFilter = (rule: string): string => rule.replace(/<(?:\w+:)?Filter(?:\s[^>]*)?(?:\/>|>[\s\S]*?<\/(?:\w+:)?Filter>)/, '');

function parseFilter(rule: string): LifecycleRule['filter'] {
  if (!/<(?:\w+:)?Filter[\s/>]/.test(rule)) return undefined;
  const filter = blocks(rule, 'Filter')[0] ?? '';
  if (/<(?:\w+:)?Tag[\s>]/.test(filter)) throw notImplemented('Lifecycle rules filtered by object tags');
  const and = blocks(filter, 'And')[0];
  const scope = and ?? filter;
  const parsed: NonNullable<LifecycleRule['filter']> = {};
  const prefix = text(scope, 'Prefix');
  if (prefix !== undefined) parsed.prefix = prefix;
  const greater = size(text(scope, 'ObjectSizeGreaterThan'), 'ObjectSizeGreaterThan');
  const less = size(text(scope, 'ObjectSizeLessThan'), 'ObjectSizeLessThan');
  if (greater !== undefined) parsed.sizeGreaterThan = greater;
  if (less !== undefined) parsed.sizeLessThan = less;
  if (and !== undefined) parsed.and = true;
  // A filter names one condition unless it is an And.
  if (and === undefined && [prefix, greater, less].filter((value) => value !== undefined).length > 1) throw malformed();
  return parsed;
}

function parseRule(block: string): LifecycleRule {
  const outside = withoutFilter(block);
  const id = text(block, 'ID') ?? randomBytes(12).toString('base64url');
  if (id.length > 255) throw invalidArgument('ID length should not exceed allowed limit of 255', 'ID', id);
  const status = text(outside, 'Status');
  if (status !== 'Enabled' && status !== 'Disabled') throw malformed();
  if (/<(?:\w+:)?(?:Noncurrent(?:Version)?)?Transition[\s>]/.test(block)) {
    for (const transition of [...blocks(block, 'Transition'), ...blocks(block, 'NoncurrentVersionTransition')]) {
      const date = text(transition, 'Date');
      if (date !== undefined) midnight(date, 'Date');
    }
    throw notImplemented('Transitions between storage classes (there is one, STANDARD)');
  }
  const rule: LifecycleRule = { id, enabled: status === 'Enabled' };
  const prefix = text(outside, 'Prefix');
  const filter = parseFilter(block);
  if (prefix !== undefined && filter !== undefined) throw malformed();
  if (prefix !== undefined) rule.prefix = prefix;
  if (filter !== undefined) rule.filter = filter;

  const expiration = blocks(block, 'Expiration')[0];
  if (expiration !== undefined) {
    const days = text(expiration, 'Days');
    const date = text(expiration, 'Date');
    const marker = text(expiration, 'ExpiredObjectDeleteMarker');
    if ([days, date, marker].filter((value) => value !== undefined).length !== 1) throw malformed();
    if (marker !== undefined && marker !== 'true' && marker !== 'false') throw malformed();
    rule.expiration = {
      ...(days !== undefined ? { days: positive(days, 'Days') } : {}),
      ...(date !== undefined ? { date: midnight(date, 'Date') } : {}),
      ...(marker !== undefined ? { expiredObjectDeleteMarker: marker === 'true' } : {}),
    };
  }
  const noncurrent = blocks(block, 'NoncurrentVersionExpiration')[0];
  if (noncurrent !== undefined) {
    const days = positive(text(noncurrent, 'NoncurrentDays'), 'NoncurrentDays');
    const newer = positive(text(noncurrent, 'NewerNoncurrentVersions'), 'NewerNoncurrentVersions');
    if (days === undefined) throw malformed();
    if (newer !== undefined && newer > 100)
      throw invalidArgument("'NewerNoncurrentVersions' is at most 100", 'NewerNoncurrentVersions', String(newer));
    rule.noncurrentExpiration = { noncurrentDays: days, ...(newer !== undefined ? { newerNoncurrentVersions: newer } : {}) };
  }
  const abort = blocks(block, 'AbortIncompleteMultipartUpload')[0];
  if (abort !== undefined) {
    const days = positive(text(abort, 'DaysAfterInitiation'), 'DaysAfterInitiation');
    if (days === undefined) throw malformed();
    rule.abortIncompleteUploadDays = days;
  }
  if (!rule.expiration && !rule.noncurrentExpiration && rule.abortIncompleteUploadDays === undefined)
    throw new S3Error('InvalidRequest', 400, 'At least one action needs to be specified in a rule');
  return rule;
}

/** The rules of a LifecycleConfiguration document, checked as S3 checks them. */
export function parseLifecycleConfiguration(xml: string): LifecycleRule[] {
  if (!/<(?:\w+:)?LifecycleConfiguration[\s>]/.test(xml)) throw malformed();
  const rules = blocks(xml, 'Rule').map(parseRule);
  if (rules.length === 0 || rules.length > MAX_RULES) throw malformed();
  const ids = new Set<string>();
  for (const rule of rules) {
    if (ids.has(rule.id)) throw invalidArgument('Rule ID must be unique. Found same ID for more than one rule', 'ID', rule.id);
    ids.add(rule.id);
  }
  return rules;
}

/** A rule as S3 gives it back: in the form it was given (rule-level Prefix, or Filter). */
function renderRule(rule: LifecycleRule): XmlNode {
  const filter = rule.filter;
  const conditions: XmlNode = {
    Prefix: filter?.prefix,
    ObjectSizeGreaterThan: filter?.sizeGreaterThan,
    ObjectSizeLessThan: filter?.sizeLessThan,
  };
  return {
    ID: rule.id,
    Prefix: rule.prefix,
    Filter: filter ? (filter.and ? { And: conditions } : conditions) : undefined,
    Status: rule.enabled ? 'Enabled' : 'Disabled',
    Expiration: rule.expiration
      ? { Days: rule.expiration.days, Date: rule.expiration.date, ExpiredObjectDeleteMarker: rule.expiration.expiredObjectDeleteMarker }
      : undefined,
    NoncurrentVersionExpiration: rule.noncurrentExpiration
      ? {
          NoncurrentDays: rule.noncurrentExpiration.noncurrentDays,
          NewerNoncurrentVersions: rule.noncurrentExpiration.newerNoncurrentVersions,
        }
      : undefined,
    AbortIncompleteMultipartUpload:
      rule.abortIncompleteUploadDays !== undefined ? { DaysAfterInitiation: rule.abortIncompleteUploadDays } : undefined,
  };
}

/**
 * S3's `x-amz-expiration` of a version a rule will expire (PUT, GET, HEAD answer it): the
 * earliest such rule's date and its ID; undefined when no enabled rule expires it.
 */
export function expirationHeader(bucket: Pick<ServedBucket, 'lifecycle'>, version: StoredVersion, dayMs: number): Record<string, string> {
  const rules = Array.isArray(bucket.lifecycle) ? (bucket.lifecycle as LifecycleRule[]) : [];
  let earliest: { at: Date; id: string } | undefined;
  for (const rule of rules) {
    if (!rule.enabled || !rule.expiration || (rule.expiration.days === undefined && rule.expiration.date === undefined)) continue;
    const scope = ruleScope(rule);
    if (!version.key.startsWith(scope.prefix)) continue;
    if (scope.sizeGreaterThan !== null && !(version.size_bytes > scope.sizeGreaterThan)) continue;
    if (scope.sizeLessThan !== null && !(version.size_bytes < scope.sizeLessThan)) continue;
    const at =
      rule.expiration.days !== undefined ? expiryOf(version.last_modified, rule.expiration.days, dayMs) : new Date(rule.expiration.date!);
    if (!earliest || at < earliest.at) earliest = { at, id: rule.id };
  }
  return earliest ? { 'x-amz-expiration': `expiry-date="${earliest.at.toUTCString()}", rule-id="${earliest.id}"` } : {};
}

const putLifecycle: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const rules = parseLifecycleConfiguration(await checkedBody(request));
  await request.store.settings.setLifecycle(bucket.id, rules, settingAudit(request, bucket, 'lifecycle', bucket.lifecycle, rules));
  request.res.statusCode = 200;
  request.res.end();
};

const getLifecycle: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const rules = Array.isArray(bucket.lifecycle) ? (bucket.lifecycle as LifecycleRule[]) : [];
  if (rules.length === 0)
    throw new S3Error('NoSuchLifecycleConfiguration', 404, 'The lifecycle configuration does not exist', { BucketName: bucket.name });
  sendXml(request.res, 200, document('LifecycleConfiguration', { Rule: rules.map(renderRule) }));
};

const deleteLifecycle = clearingBucketSetting(
  'lifecycle',
  (bucket) => bucket.lifecycle,
  (request, bucketId, audit) => request.store.settings.setLifecycle(bucketId, null, audit),
);

export const bucketLifecycleRoutes = { GET: getLifecycle, PUT: putLifecycle, DELETE: deleteLifecycle };
