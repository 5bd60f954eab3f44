import { createHash, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import type { EmbeddedObjectStore } from '../store.ts';
import type { ServedBucket } from '../rows.ts';
import type { Access, Caller } from './access.ts';
import type { AuditStatement, S3Actor } from './platform-port.ts';
import { S3Error } from './errors.ts';
import { assertContentMd5, uploadBody } from './payload.ts';
import { requestTimeout } from './stall.ts';
import type { SignedRequest } from './sigv4.ts';
import { askForBody } from './unread-body.ts';

/** One authenticated S3 request, as the handlers see it. */
export interface S3Request {
  req: IncomingMessage;
  res: ServerResponse;
  caller: Caller;
  signed: SignedRequest;
  signingKey: KeyObject;
  scope: string;
  /** Path-style: the first path segment (decoded); '' for the service (ListBuckets). */
  bucketName: string;
  /** The rest of the path (decoded); '' when the request is about the bucket. */
  key: string;
  query: URLSearchParams;
  store: EmbeddedObjectStore;
  access: Access;
  region: string;
  requestId: string;
  /** A body that stops coming for this long is ended with RequestTimeout. */
  stallTimeoutMs: number;
  /** The request came over TLS (the endpoint's own, or a proxy's it is told to trust): SSE-C needs it. */
  secure: boolean;
  /** A stream that paces an upload's bytes while the API is busy (admission.ts), if any. */
  bodyPace?: () => Transform;
  /** Paces a download's bytes while the API is busy (admission.ts), if anything does. */
  sendPace?: (bytes: number) => Promise<void>;
}

export type S3Handler = (request: S3Request) => Promise<void>;

/** The access key of the request, as the audit trail names who made a change. */
export const actorOf = (request: S3Request): S3Actor => ({
  orgId: request.caller.orgId,
  keyId: request.caller.keyId,
  accessKeyId: request.signed.accessKeyId,
  requestId: request.requestId,
});

/**
 * The settings of a bucket an S3 request changes, by the name its audit events give them
 * (`bucket.set_<name>`); an object's ACL among them, recorded on its bucket's trail.
 */
export type BucketSetting =
  'acl' | 'object_acl' | 'policy' | 'public_access_block' | 'cors' | 'lifecycle' | 'encryption' | 'object_lock' | 'tags' | 'ownership';

/**
 * The audit statement of a change this request makes to a bucket's setting, which the store runs
 * in the change's transaction: `bucket.set_<setting>`, or `bucket.delete_<setting>` when `after`
 * is null, in the bucket's organization's trail.
 */
export function settingAudit(
  request: S3Request,
  bucket: Pick<ServedBucket, 'id' | 'org_id'>,
  setting: BucketSetting,
  before: unknown,
  after: unknown,
): AuditStatement {
  return request.access.platform.settingAudit({
    actor: actorOf(request),
    orgId: bucket.org_id,
    bucketId: bucket.id,
    action: `bucket.${after === null ? 'delete' : 'set'}_${setting}`,
    before: before === null || before === undefined ? null : { [setting]: before },
    after: after === null ? null : { [setting]: after },
  });
}

/**
 * The DELETE of a bucket setting (its CORS, policy, lifecycle…): the setting cleared by `clear`
 * with its audit event (what it was: `current`), answered 204.
 */
export const clearingBucketSetting =
  (
    setting: BucketSetting,
    current: (bucket: ServedBucket) => unknown,
    clear: (request: S3Request, bucketId: string, audit: AuditStatement) => Promise<unknown>,
  ): S3Handler =>
  async (request) => {
    const bucket = await request.access.bucket(request.caller, request.bucketName);
    await clear(request, bucket.id, settingAudit(request, bucket, setting, current(bucket), null));
    request.res.statusCode = 204;
    request.res.end();
  };

/** Sends an XML answer. */
export function sendXml(res: ServerResponse, status: number, xml: string, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/xml');
  res.setHeader('Content-Length', Buffer.byteLength(xml));
  res.end(xml);
}

/**
 * Reads a small request body (Delete, CompleteMultipartUpload, Tagging…): at most `limit` bytes;
 * a client that stops sending it for `stallTimeoutMs` is answered RequestTimeout.
 */
export function smallBody(request: S3Request, limit = 2 * 1024 * 1024): Promise<Buffer> {
  const { req, res } = request;
  askForBody(req, res);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let seen = -1;
    const timer = setInterval(() => {
      if (size === seen) return fail(requestTimeout());
      seen = size;
    }, request.stallTimeoutMs);
    const fail = (error: Error) => {
      clearInterval(timer);
      req.off('data', onData);
      req.pause();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) fail(new S3Error('MaxMessageLengthExceeded', 400, 'Your request was too big.'));
      else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      clearInterval(timer);
      resolve(Buffer.concat(chunks));
    });
    req.once('error', (error) => fail(error));
    req.once('close', () => {
      if (!req.complete) fail(Object.assign(new Error('the client went away mid-body'), { code: 'ECONNRESET' }));
    });
  });
}

/**
 * A small request body (Tagging, ACL, VersioningConfiguration, Delete…), checked against the
 * Content-MD5 and the signed payload hash when the request carries them.
 */
export async function checkedSmallBody(request: S3Request): Promise<string> {
  assertContentMd5(headerOf(request, 'content-md5'));
  const raw = await smallBody(request);
  const md5 = request.req.headers['content-md5'];
  if (typeof md5 === 'string' && createHash('md5').update(raw).digest('base64') !== md5.trim())
    throw new S3Error('BadDigest', 400, 'The Content-MD5 you specified did not match what we received.');
  if (/^[0-9a-f]{64}$/.test(request.signed.payloadHash) && createHash('sha256').update(raw).digest('hex') !== request.signed.payloadHash)
    throw new S3Error('XAmzContentSHA256Mismatch', 400, 'The provided x-amz-content-sha256 header does not match what was computed.');
  return raw.toString('utf8');
}

/** A header's value (several of the same name joined by commas). */
/** The body of an upload (PutObject, UploadPart), checked as it streams against the request's signature and digests. */
export function signedUploadBody(request: S3Request): ReturnType<typeof uploadBody> {
  return uploadBody(
    request.req,
    request.res,
    request.signed.payloadHash,
    { key: request.signingKey, amzDate: request.signed.amzDate, scope: request.scope, seedSignature: request.signed.signature },
    request.stallTimeoutMs,
    request.bodyPace?.(),
  );
}

export function headerOf(request: S3Request, name: string): string | undefined {
  const value = request.req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}
