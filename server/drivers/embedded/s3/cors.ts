import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServedBucket } from '../rows.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import { S3Error } from './errors.ts';
import type { S3Platform } from './platform-port.ts';
import { checkedBody } from './config-body.ts';
import { sendXml, clearingBucketSetting, settingAudit, type S3Handler } from './request.ts';
import { blocks, document, text, unescapeXml } from './xml.ts';

/**
 * CORS on the S3 endpoint: a bucket's rules (Put/Get/DeleteBucketCors), applied to browsers'
 * preflight requests (OPTIONS, which carry no credentials, as S3 answers them) and to the
 * answers of real requests that carry an Origin (the Access-Control-* headers).
 */
export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

const METHODS = new Set(['GET', 'PUT', 'HEAD', 'POST', 'DELETE']);
const MAX_RULES = 100;

const invalidRequest = (message: string) => new S3Error('InvalidRequest', 400, message);
const malformed = () =>
  new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');

const all = (xml: string, name: string): string[] => blocks(xml, name).map((value) => unescapeXml(value).trim());

/** The rules of a CORSConfiguration document, checked as S3 checks them. */
export function parseCorsConfiguration(xml: string): CorsRule[] {
  if (!/<(?:\w+:)?CORSConfiguration[\s>]/.test(xml)) throw malformed();
  const rules = blocks(xml, 'CORSRule');
  if (rules.length === 0 || rules.length > MAX_RULES) throw malformed();
  return rules.map((rule) => {
    const allowedOrigins = all(rule, 'AllowedOrigin');
    const allowedMethods = all(rule, 'AllowedMethod');
    const allowedHeaders = all(rule, 'AllowedHeader');
    const exposeHeaders = all(rule, 'ExposeHeader');
    const id = text(rule, 'ID');
    const maxAge = text(rule, 'MaxAgeSeconds');
    if (allowedOrigins.length === 0 || allowedMethods.length === 0) throw malformed();
    for (const method of allowedMethods)
      if (!METHODS.has(method)) throw invalidRequest(`Found unsupported HTTP method in CORS config. Unsupported method is ${method}`);
    for (const origin of allowedOrigins)
      if (origin.split('*').length > 2) throw invalidRequest(`AllowedOrigin "${origin}" can not have more than one wildcard.`);
    for (const allowed of allowedHeaders)
      if (allowed.split('*').length > 2) throw invalidRequest(`AllowedHeader "${allowed}" can not have more than one wildcard.`);
    if (id !== undefined && id.length > 255) throw invalidRequest('The ID of a CORS rule is at most 255 characters');
    if (maxAge !== undefined && !/^\d+$/.test(maxAge.trim())) throw malformed();
    return {
      ...(id !== undefined ? { id } : {}),
      allowedOrigins,
      allowedMethods,
      allowedHeaders,
      exposeHeaders,
      ...(maxAge !== undefined ? { maxAgeSeconds: Number(maxAge) } : {}),
    };
  });
}

/** A pattern with at most one `*`, matched whole. */
function matches(pattern: string, value: string, caseInsensitive = false): boolean {
  const [p, v] = caseInsensitive ? [pattern.toLowerCase(), value.toLowerCase()] : [pattern, value];
  const star = p.indexOf('*');
  if (star < 0) return p === v;
  const head = p.slice(0, star);
  const tail = p.slice(star + 1);
  return v.length >= head.length + tail.length && v.startsWith(head) && v.endsWith(tail);
}

const rulesOf = (bucket: Pick<ServedBucket, 'cors'>): CorsRule[] => (Array.isArray(bucket.cors) ? (bucket.cors as CorsRule[]) : []);

/** The first rule allowing the origin, the method and every requested header. */
function matchingRule(rules: CorsRule[], origin: string, method: string, requestedHeaders: string[]): CorsRule | undefined {
  return rules.find(
    (rule) =>
      rule.allowedOrigins.some((allowed) => matches(allowed, origin)) &&
      rule.allowedMethods.includes(method) &&
      requestedHeaders.every((name) => rule.allowedHeaders.some((allowed) => matches(allowed, name, true))),
  );
}

/** The Access-Control-* headers a rule gives an origin. */
function ruleHeaders(rule: CorsRule, origin: string): Record<string, string> {
  const anyOrigin = rule.allowedOrigins.includes('*');
  const headers: Record<string, string> = {
    'Access-Control-Allow-Origin': anyOrigin ? '*' : origin,
    'Access-Control-Allow-Methods': rule.allowedMethods.join(', '),
    Vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
  };
  // A response to any origin cannot carry credentials (browsers refuse the pair).
  if (!anyOrigin) headers['Access-Control-Allow-Credentials'] = 'true';
  if (rule.exposeHeaders.length > 0) headers['Access-Control-Expose-Headers'] = rule.exposeHeaders.join(', ');
  if (rule.maxAgeSeconds !== undefined) headers['Access-Control-Max-Age'] = String(rule.maxAgeSeconds);
  return headers;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/**
 * Gives the answer to a real request the CORS headers of the bucket's first rule that allows the
 * request's origin and method (none when no rule does, so the browser keeps the answer from the page).
 */
export function applyCors(req: IncomingMessage, res: ServerResponse, bucket: Pick<ServedBucket, 'cors'>): void {
  const origin = header(req, 'origin');
  if (origin === undefined) return;
  const rule = matchingRule(rulesOf(bucket), origin, req.method ?? 'GET', []);
  if (!rule) return;
  for (const [name, value] of Object.entries(ruleHeaders(rule, origin))) res.setHeader(name, value);
}

const forbidden = (message: string) => new S3Error('AccessForbidden', 403, message);
const NOT_ALLOWED =
  "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";

/**
 * A browser's preflight (OPTIONS /bucket[/key]), answered without credentials as S3 answers it.
 * Bucket names are per organization here: the preflight finds the bucket by its name among every
 * organization's, and is refused when the name is not one served bucket's.
 */
/**
 * The buckets in service of that name, in every organization: what a request that names no
 * organization (a preflight, an unsigned request) may mean. Its CORS rules apply when there is one.
 */
export async function servedBucketsNamed(
  bucketName: string,
  deps: { store: EmbeddedObjectStore; platform: S3Platform },
): Promise<ServedBucket[]> {
  const served: ServedBucket[] = [];
  for (const bucket of await deps.store.objects.bucketsNamed(bucketName))
    if ((await deps.platform.activeBucketId(bucket.org_id, bucketName)) === bucket.id) served.push(bucket);
  return served;
}

export async function preflight(
  req: IncomingMessage,
  res: ServerResponse,
  bucketName: string,
  deps: { store: EmbeddedObjectStore; platform: S3Platform },
): Promise<void> {
  const origin = header(req, 'origin');
  const method = header(req, 'access-control-request-method')?.trim();
  if (origin === undefined) throw new S3Error('BadRequest', 400, 'Insufficient information. Origin request header needed.');
  if (method === undefined || method === '') throw new S3Error('BadRequest', 400, 'Invalid Access-Control-Request-Method header.');
  if (bucketName === '') throw forbidden(NOT_ALLOWED);
  const served = await servedBucketsNamed(bucketName, deps);
  if (served.length === 0) throw new S3Error('NoSuchBucket', 404, 'The specified bucket does not exist', { BucketName: bucketName });
  const bucket = served.length === 1 ? served[0]! : undefined;
  const rules = bucket ? rulesOf(bucket) : [];
  if (bucket && rules.length === 0) throw forbidden('CORSResponse: CORS is not enabled for this bucket.');
  const requested = (header(req, 'access-control-request-headers') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const rule = matchingRule(rules, origin, method, requested);
  if (!rule) throw forbidden(NOT_ALLOWED);
  const headers = ruleHeaders(rule, origin);
  if (requested.length > 0) headers['Access-Control-Allow-Headers'] = requested.join(', ');
  res.statusCode = 200;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Length', '0');
  res.end();
}

const putBucketCors: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const rules = parseCorsConfiguration(await checkedBody(request));
  await request.store.settings.setCors(bucket.id, rules, settingAudit(request, bucket, 'cors', bucket.cors, rules));
  request.res.statusCode = 200;
  request.res.end();
};

const getBucketCors: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const rules = rulesOf(bucket);
  if (rules.length === 0)
    throw new S3Error('NoSuchCORSConfiguration', 404, 'The CORS configuration does not exist', { BucketName: bucket.name });
  sendXml(
    request.res,
    200,
    document('CORSConfiguration', {
      CORSRule: rules.map((rule) => ({
        ID: rule.id,
        AllowedHeader: rule.allowedHeaders,
        AllowedMethod: rule.allowedMethods,
        AllowedOrigin: rule.allowedOrigins,
        ExposeHeader: rule.exposeHeaders,
        MaxAgeSeconds: rule.maxAgeSeconds,
      })),
    }),
  );
};

const deleteBucketCors = clearingBucketSetting(
  'cors',
  (bucket) => bucket.cors,
  (request, bucketId, audit) => request.store.settings.setCors(bucketId, null, audit),
);

export const bucketCorsRoutes = { GET: getBucketCors, PUT: putBucketCors, DELETE: deleteBucketCors };
