import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { LruMap } from '../../../core/lru-map.ts';
import { S3Error, accessDenied } from './errors.ts';
import type { RequestParts, SignedRequest } from './signed-request.ts';
import { parseSignatureV2, verifySignatureV2 } from './sigv2.ts';

export type { RequestParts, SignedRequest };

/**
 * AWS Signature Version 4 as S3 checks it, in the Authorization header or in a presigned URL's
 * query. What is parsed here is checked against the secret by `verify`; the payload's own
 * signatures (aws-chunked) are checked as the body streams (chunked.ts), from the seed signature.
 */
export const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
/** Requests may be this far from our clock (S3: 15 minutes). */
const MAX_SKEW_MS = 15 * 60_000;
/** S3's longest presigned URL: 7 days. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

const missing = (what: string) => new S3Error('AuthorizationHeaderMalformed', 400, `The authorization header is malformed; ${what}`);

/** The signature of a request, or undefined when it carries none (anonymous). */
export function parseSignature(request: RequestParts, now: Date): SignedRequest | undefined {
  const query = new URLSearchParams(request.rawQuery);
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^AWS4-HMAC-SHA256\s+(.*)$/.exec(header);
    if (!match) {
      if (header.startsWith('AWS ')) return parseSignatureV2(request, now);
      throw missing('expected AWS4-HMAC-SHA256');
    }
    const fields = Object.fromEntries(
      match[1]!.split(/\s*,\s*/).map((part) => {
        const at = part.indexOf('=');
        return [part.slice(0, at).trim(), part.slice(at + 1).trim()];
      }),
    );
    const [accessKeyId, date, region, service, terminal] = (fields.Credential ?? '').split('/');
    if (!accessKeyId || !date || !region || service !== 's3' || terminal !== 'aws4_request') throw missing('bad Credential');
    if (!fields.SignedHeaders || !fields.Signature) throw missing('SignedHeaders and Signature are required');
    const amzDate = headerValue(request.headers, 'x-amz-date') ?? amzDateOf(headerValue(request.headers, 'date'));
    checkDate(amzDate, date, now);
    const payloadHash = headerValue(request.headers, 'x-amz-content-sha256');
    if (!payloadHash) throw new S3Error('InvalidRequest', 400, 'Missing required header for this request: x-amz-content-sha256');
    return {
      accessKeyId,
      date,
      region,
      amzDate,
      signedHeaders: fields.SignedHeaders.split(';'),
      signature: fields.Signature,
      payloadHash,
      presigned: false,
    };
  }
  if (query.get('X-Amz-Algorithm') !== null) {
    if (query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') throw invalidQuery('X-Amz-Algorithm must be AWS4-HMAC-SHA256');
    const [accessKeyId, date, region, service, terminal] = (query.get('X-Amz-Credential') ?? '').split('/');
    if (!accessKeyId || !date || !region || service !== 's3' || terminal !== 'aws4_request') throw invalidQuery('bad X-Amz-Credential');
    const amzDate = query.get('X-Amz-Date') ?? '';
    const expires = Number(query.get('X-Amz-Expires'));
    const signedHeaders = query.get('X-Amz-SignedHeaders');
    const signature = query.get('X-Amz-Signature');
    if (!signedHeaders || !signature) throw invalidQuery('X-Amz-SignedHeaders and X-Amz-Signature are required');
    if (!Number.isInteger(expires) || expires > MAX_PRESIGN_SECONDS) throw invalidQuery('X-Amz-Expires must be at most 604800 seconds');
    // Signed to expire before it was made (0 or less): expired, as S3 and RGW answer it.
    if (expires < 1) throw accessDenied('Request has expired');
    const signedAt = parseAmzDate(amzDate);
    if (!signedAt || amzDate.slice(0, 8) !== date) throw invalidQuery('bad X-Amz-Date');
    if (signedAt.getTime() - MAX_SKEW_MS > now.getTime()) throw accessDenied('Request is not valid yet');
    if (signedAt.getTime() + expires * 1000 < now.getTime()) throw accessDenied('Request has expired');
    return {
      accessKeyId,
      date,
      region,
      amzDate,
      signedHeaders: signedHeaders.split(';'),
      signature,
      payloadHash: query.get('X-Amz-Content-Sha256') ?? headerValue(request.headers, 'x-amz-content-sha256') ?? UNSIGNED_PAYLOAD,
      presigned: true,
    };
  }
  return parseSignatureV2(request, now);
}

const invalidQuery = (message: string) => new S3Error('AuthorizationQueryParametersError', 400, message);

function checkDate(amzDate: string, scopeDate: string, now: Date): void {
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt) throw new S3Error('AccessDenied', 403, 'AWS authentication requires a valid Date or x-amz-date header');
  if (amzDate.slice(0, 8) !== scopeDate) throw missing('the credential date does not match x-amz-date');
  if (Math.abs(signedAt.getTime() - now.getTime()) > MAX_SKEW_MS)
    throw new S3Error('RequestTimeTooSkewed', 403, 'The difference between the request time and the current time is too large.');
}

/**
 * Without x-amz-date, SigV4 takes the Date header (an HTTP date), signing the same instant in its
 * own form (the SDKs do so when a request carries a Date header).
 */
function amzDateOf(httpDate: string | undefined): string {
  const time = httpDate === undefined ? NaN : Date.parse(httpDate);
  if (Number.isNaN(time)) return '';
  return new Date(time)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function parseAmzDate(value: string): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) return undefined;
  const [y = 0, mo = 1, d = 1, h = 0, mi = 0, s = 0] = match.slice(1).map(Number);
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s));
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters. */
export function uriEncode(text: string, keepSlash = false): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, keepSlash ? '/' : '%2F');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, '%20'));
  } catch {
    return text;
  }
}

function canonicalQuery(rawQuery: string, presigned: boolean): string {
  if (rawQuery === '') return '';
  return rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      const name = safeDecode(at < 0 ? pair : pair.slice(0, at));
      const value = at < 0 ? '' : safeDecode(pair.slice(at + 1));
      return [uriEncode(name), uriEncode(value)] as const;
    })
    .filter(([name]) => !(presigned && name === 'X-Amz-Signature'))
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

function canonicalHeaders(headers: IncomingHttpHeaders, signed: string[]): string {
  return signed
    .map((name) => {
      const value = headerValue(headers, name);
      if (value === undefined) throw new S3Error('SignatureDoesNotMatch', 403, `The signed header ${name} is missing from the request`);
      return `${name}:${signedText(value).trim().replace(/\s+/g, ' ')}\n`;
    })
    .join('');
}

/**
 * A header value as its client signed it: Node reads header bytes as Latin-1, so bytes that are
 * UTF-8 (what most clients send for non-ASCII text) are read back as the text they encode; any
 * other bytes are the Latin-1 characters they are (what clients encoding headers as Latin-1 sign).
 */
function signedText(value: string): string {
  const bytes = Buffer.from(value, 'latin1');
  const utf8 = bytes.toString('utf8');
  return Buffer.from(utf8, 'utf8').equals(bytes) ? utf8 : value;
}

/**
 * Signing keys derived lately, by day, region and secret: a key signs every request of its day
 * and region, and deriving it is four HMACs, as much as the rest of checking a small request's
 * signature (AWS's SDKs keep it likewise). Only ever found through the secret, which the key's
 * lookup (and so its revocation) gives first. Kept as a key object: an HMAC made with raw bytes
 * as its key first turns them into one, five times the HMAC's own cost on a small request.
 */
const derivedKeys = new LruMap<string, KeyObject>(1_000);

export function signingKey(secret: string, date: string, region: string): KeyObject {
  const cacheKey = `${date}\n${region}\n${secret}`;
  const cached = derivedKeys.get(cacheKey);
  if (cached) return cached;
  const kDate = hmac(`AWS4${secret}`, date);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, 's3');
  const key = createSecretKey(hmac(kService, 'aws4_request'));
  derivedKeys.set(cacheKey, key);
  return key;
}

export function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

export const sha256Hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

export const scopeOf = (signed: SignedRequest): string => `${signed.date}/${signed.region}/s3/aws4_request`;

/** Checks the request's signature with the key's secret; returns the signing key (for chunk signatures). */
export function verify(request: RequestParts, signed: SignedRequest, secret: string): KeyObject {
  if (signed.version === 2) return verifySignatureV2(request, signed, secret);
  if (!signed.signedHeaders.includes('host')) throw new S3Error('AccessDenied', 403, 'The host header must be signed');
  const canonicalPath = request.rawPath
    .split('/')
    .map((segment) => uriEncode(safeDecodePath(segment)))
    .join('/');
  const canonicalRequest = [
    request.method,
    canonicalPath,
    canonicalQuery(request.rawQuery, signed.presigned),
    canonicalHeaders(request.headers, signed.signedHeaders),
    signed.signedHeaders.join(';'),
    signed.payloadHash,
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', signed.amzDate, scopeOf(signed), sha256Hex(canonicalRequest)].join('\n');
  const key = signingKey(secret, signed.date, signed.region);
  const expected = createHmac('sha256', key).update(stringToSign).digest();
  if (!sameHex(expected, signed.signature))
    throw new S3Error(
      'SignatureDoesNotMatch',
      403,
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  return key;
}

/** Path segments decode without turning '+' into a space (only queries use that form). */
function safeDecodePath(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Constant-time comparison of a computed signature with the hex one given. */
export function sameHex(expected: Buffer, given: string): boolean {
  if (!/^[0-9a-f]+$/.test(given) || given.length !== expected.length * 2) return false;
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
