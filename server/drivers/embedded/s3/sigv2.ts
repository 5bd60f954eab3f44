import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { S3Error, accessDenied } from './errors.ts';
import type { RequestParts, SignedRequest } from './signed-request.ts';

/**
 * AWS Signature Version 2, as S3 (and Ceph's gateway) still take it from older tools: an
 * HMAC-SHA1 over the method, Content-MD5, Content-Type, the date, the x-amz-* headers and the
 * resource with its sub-resources, in the Authorization header (`AWS id:signature`) or a
 * presigned URL (`AWSAccessKeyId`, `Expires`, `Signature`). It signs no payload: a body is checked
 * by its Content-MD5 or x-amz-content-sha256 when given, and aws-chunked bodies need SigV4.
 */

/** Requests may be this far from our clock (S3: 15 minutes). */
const MAX_SKEW_MS = 15 * 60_000;

/** The query parameters that are part of the signed resource, as S3 and the SDKs list them. */
const SIGNED_SUB_RESOURCES = new Set([
  'accelerate',
  'acl',
  'analytics',
  'cors',
  'delete',
  'encryption',
  'inventory',
  'lifecycle',
  'location',
  'logging',
  'metrics',
  'notification',
  'object-lock',
  'ownershipControls',
  'partNumber',
  'policy',
  'publicAccessBlock',
  'replication',
  'requestPayment',
  'response-cache-control',
  'response-content-disposition',
  'response-content-encoding',
  'response-content-language',
  'response-content-type',
  'response-expires',
  'restore',
  'retention',
  'legal-hold',
  'select',
  'select-type',
  'storageClass',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
  'versionId',
  'versioning',
  'versions',
  'website',
]);

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** When the request says it was made: x-amz-date before Date, as S3 reads them; S3's refusals otherwise. */
function signedAt(headers: IncomingHttpHeaders, now: Date): void {
  const given = headerValue(headers, 'x-amz-date') ?? headerValue(headers, 'date');
  const time = given === undefined || given.trim() === '' ? NaN : Date.parse(given);
  // A date before the epoch is as unusable as no date (RGW and S3 answer both AccessDenied).
  if (Number.isNaN(time) || time < 0) throw accessDenied('AWS authentication requires a valid Date or x-amz-date header');
  if (Math.abs(time - now.getTime()) > MAX_SKEW_MS)
    throw new S3Error('RequestTimeTooSkewed', 403, 'The difference between the request time and the current time is too large.');
}

/** The Authorization header's `AWS id:signature`, or a presigned URL's parameters; undefined for neither. */
export function parseSignatureV2(request: RequestParts, now: Date): SignedRequest | undefined {
  const header = request.headers.authorization;
  const query = new URLSearchParams(request.rawQuery);
  let accessKeyId: string;
  let signature: string;
  let presigned = false;
  if (header !== undefined && header.startsWith('AWS ')) {
    const match = /^AWS ([^:\s]+):(\S+)$/.exec(header.trim());
    if (!match) throw new S3Error('InvalidArgument', 400, 'AWS authorization header is invalid. Expected AwsAccessKeyId:signature');
    [, accessKeyId, signature] = match as unknown as [string, string, string];
    signedAt(request.headers, now);
  } else if (header === undefined && query.get('AWSAccessKeyId') !== null && query.get('Signature') !== null) {
    accessKeyId = query.get('AWSAccessKeyId')!;
    signature = query.get('Signature')!;
    const expires = Number(query.get('Expires'));
    if (!Number.isInteger(expires))
      throw accessDenied('Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters');
    if (expires * 1000 < now.getTime()) throw accessDenied('Request has expired');
    presigned = true;
  } else return undefined;
  const contentSha256 = headerValue(request.headers, 'x-amz-content-sha256');
  // The payload is not signed: a SHA-256 given is checked as the body comes; streaming forms need SigV4.
  if (contentSha256 !== undefined && !/^[0-9a-f]{64}$/.test(contentSha256) && contentSha256 !== 'UNSIGNED-PAYLOAD')
    throw new S3Error('InvalidRequest', 400, `x-amz-content-sha256 ${contentSha256} needs Signature Version 4`);
  return {
    accessKeyId,
    date: '',
    region: '',
    amzDate: '',
    signedHeaders: [],
    signature,
    payloadHash: contentSha256 ?? 'UNSIGNED-PAYLOAD',
    presigned,
    version: 2,
  };
}

/** The string a SigV2 signature signs, with the given date line and resource path. */
function stringToSign(request: RequestParts, presigned: boolean, date: string, path: string): string {
  const amzHeaders = Object.keys(request.headers)
    .filter((name) => name.startsWith('x-amz-'))
    .sort()
    .map((name) => `${name}:${headerValue(request.headers, name)!.trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const subResources = request.rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      const decode = (text: string) => {
        try {
          return decodeURIComponent(text.replace(/\+/g, '%20'));
        } catch {
          return text;
        }
      };
      return at < 0 ? ([decode(pair), undefined] as const) : ([decode(pair.slice(0, at)), decode(pair.slice(at + 1))] as const);
    })
    .filter(([name]) => SIGNED_SUB_RESOURCES.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => (value === undefined ? name : `${name}=${value}`))
    .join('&');
  const resource = `${path}${subResources ? `?${subResources}` : ''}`;
  return [
    request.method,
    headerValue(request.headers, 'content-md5') ?? '',
    headerValue(request.headers, 'content-type') ?? '',
    presigned ? (new URLSearchParams(request.rawQuery).get('Expires') ?? '') : date,
    `${amzHeaders}${resource}`,
  ].join('\n');
}

/** The signing key of a request without one to sign chunks with: SigV2's, and an unsigned request's. */
export const NO_SIGNING_KEY: KeyObject = createSecretKey(Buffer.alloc(0));

/**
 * Checks a SigV2 signature with the key's secret. The date line is the Date header's; with an
 * x-amz-date, S3 signs an empty one (the x-amz-date is among the signed headers), which some
 * clients do and some do not: either is taken. Returns an empty signing key (SigV2 signs no chunks).
 */
export function verifySignatureV2(request: RequestParts, signed: SignedRequest, secret: string): KeyObject {
  const given = Buffer.from(signed.signature, 'base64');
  const dates = [headerValue(request.headers, 'date') ?? ''];
  if (headerValue(request.headers, 'x-amz-date') !== undefined) dates.push('');
  // A bucket's resource is `/bucket/` to S3's own signers (the SDKs sign it so); `/bucket` is taken too.
  const paths = [request.rawPath];
  if (/^\/[^/]+$/.test(request.rawPath)) paths.push(`${request.rawPath}/`);
  const matches = dates.some((date) =>
    paths.some((path) => {
      const expected = createHmac('sha1', secret)
        .update(stringToSign(request, signed.presigned, date, path), 'utf8')
        .digest();
      return expected.length === given.length && timingSafeEqual(expected, given);
    }),
  );
  if (!matches)
    throw new S3Error(
      'SignatureDoesNotMatch',
      403,
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  return NO_SIGNING_KEY;
}
