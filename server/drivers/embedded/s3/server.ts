import { randomIdBytes } from '../../../core/random-ids.ts';
import { http } from '../../../node-http.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { StoreRefusal } from '../refusals.ts';
import type { ServedBucket } from '../rows.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import type { Logger } from '../../../logging.ts';
import type { CacheSection } from '../../../db/announced-cache.ts';
import { ANONYMOUS, createAccess, type Caller } from './access.ts';
import { publicRequestGate, unsignedRequest, type PublicAccess } from './anonymous.ts';
import type { S3Platform } from './platform-port.ts';
import { bucketRoutes } from './bucket-handlers.ts';
import { applyCors, preflight, servedBucketsNamed } from './cors.ts';
import { isDatabaseError } from '../../../db/unavailable.ts';
import { REFUSAL_STATUS, S3Error, accessDenied, assertStorable, unavailableError } from './errors.ts';
import { multipartRoutes } from './multipart-handlers.ts';
import { actionOf, useOf } from './policy-actions.ts';
import { assertContentMd5 } from './payload.ts';
import { objectRoutes } from './object-handlers.ts';
import { objectLockRoutes } from './object-lock.ts';
import { postObject } from './post-object.ts';
import type { S3Request } from './request.ts';
import type { Admission } from './admission.ts';
import { parseSignature, scopeOf, verify } from './sigv4.ts';
import { NO_SIGNING_KEY } from './sigv2.ts';
import {
  OBJECT_SUB_RESOURCES,
  refuseBlockedPublicAcl,
  refuseUnofferedGuarantees,
  subResourceOf,
  type ObjectSubResource,
} from './sub-resources.ts';
import { document } from './xml.ts';
import type { S3Handler } from './request.ts';
import { answerAfterBody } from './unread-body.ts';

export interface S3Endpoint {
  url: string;
  close(): Promise<void>;
}

/**
 * The S3 endpoint of the embedded object store: path-style addressing (`/<bucket>/<key>`),
 * Signature Version 4 in headers or presigned URLs, S3's XML errors. Serves the buckets of the
 * caller's organization (the key's), by their platform names.
 */
export async function startS3Endpoint(options: {
  store: EmbeddedObjectStore;
  /** What the platform says of keys and buckets (the storage area's port). */
  platform: S3Platform;
  /** Where accepted keys are kept (a section of the credential cache), if anywhere. */
  keys?: CacheSection<Caller>;
  /** Where the organizations' served buckets are kept, by name (a cache of its own), if anywhere. */
  served?: CacheSection<ServedBucket>;
  port: number;
  host: string;
  region: string;
  /** A request body that stops coming for this long is ended with RequestTimeout (S3_BODY_TIMEOUT_SECONDS). */
  bodyTimeoutMs: number;
  log: Logger;
  /** Serve https with this certificate chain and key (PEM) rather than http. */
  tls?: { cert: Buffer; key: Buffer };
  /** Count `X-Forwarded-Proto: https` as TLS (behind a proxy that terminates it). */
  trustForwardedProto?: boolean;
  /** Serve unsigned requests what buckets share with everyone, within this limit (anonymous.ts); unset: refuse them. */
  publicAccess?: PublicAccess;
  /** When each request may start (admission.ts); unset: at once. */
  admission?: Admission;
}): Promise<S3Endpoint> {
  const { store, region, log } = options;
  const access = createAccess(options.platform, store, options.keys, options.served);
  const admitUnsigned = publicRequestGate(options.publicAccess);
  const isSecure = (req: IncomingMessage): boolean =>
    (req.socket as TLSSocket).encrypted === true ||
    (options.trustForwardedProto === true &&
      String(req.headers['x-forwarded-proto'] ?? '')
        .split(',')[0]!
        .trim() === 'https');
  const route = (request: S3Request): S3Handler => {
    const { bucketName, key, req } = request;
    if (bucketName === '') {
      if (req.method === 'GET') return bucketRoutes.listBuckets;
      throw new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.');
    }
    refuseUnofferedGuarantees(request);
    if (key === '') return bucketRoutes.route(request);
    // A part's upload carries partNumber too: the upload it belongs to decides.
    if (request.query.has('uploads') || request.query.has('uploadId')) return multipartRoutes.route(request);
    // Object lock's sub-resources are served by its own handlers; every other one by method and
    // sub-resource in objectRoutes, where what is not offered is refused before it can touch the object.
    const subResource = subResourceOf(request, OBJECT_SUB_RESOURCES);
    const lockOperation = subResource === undefined ? undefined : OBJECT_SUB_RESOURCE_OPERATIONS[subResource]?.[request.req.method ?? ''];
    if (lockOperation) return lockOperation;
    return objectRoutes.route(request);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string) => {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const rawPath = queryAt < 0 ? url : url.slice(0, queryAt);
    const rawQuery = queryAt < 0 ? '' : url.slice(queryAt + 1);
    const parts = { method: req.method ?? 'GET', rawPath, rawQuery, headers: req.headers };
    // Two requests carry no Authorization of their own: a browser's CORS preflight, answered
    // without credentials as S3 answers it, and a browser's form upload, signed by its policy.
    if (req.method === 'OPTIONS') return preflight(req, res, bucketOf(rawPath), { store, platform: options.platform });
    if (
      req.method === 'POST' &&
      isBucketPath(rawPath) &&
      rawQuery === '' &&
      /^multipart\/form-data/i.test(req.headers['content-type'] ?? '')
    )
      return postObject(req, res, bucketOf(rawPath), {
        store,
        access,
        secure: isSecure(req),
        admitUnsigned: () => admitUnsigned(req),
        bodyPace: options.admission?.bodyPace,
      });
    const signature = parseSignature(parts, new Date());
    if (!signature) admitUnsigned(req);
    const signed = signature ?? unsignedRequest(req);
    // A Content-MD5 that cannot be an MD5 is refused as S3 refuses it, whatever the signature.
    assertContentMd5(typeof req.headers['content-md5'] === 'string' ? req.headers['content-md5'] : undefined);
    const caller = signature ? await access.caller(signature.accessKeyId) : ANONYMOUS;
    const signingKey = signature ? verify(parts, signature, caller.secret) : NO_SIGNING_KEY;
    const path = decodePath(rawPath.replace(/^\/+/, ''));
    const slash = path.indexOf('/');
    const bucketName = slash < 0 ? path : path.slice(0, slash);
    if (bucketName.includes('\u0000'))
      throw new S3Error('InvalidBucketName', 400, 'The specified bucket is not valid.', {
        BucketName: bucketName.replaceAll('\u0000', '%00'),
      });
    const query = new URLSearchParams(rawQuery);
    for (const [name, value] of query) assertStorable(value, assertStorable(name, 'query parameter'));
    const request: S3Request = {
      req,
      res,
      caller,
      signed,
      signingKey,
      scope: scopeOf(signed),
      bucketName,
      key: slash < 0 ? '' : assertStorable(path.slice(slash + 1), 'key'),
      query,
      store,
      access,
      region,
      requestId,
      stallTimeoutMs: options.bodyTimeoutMs,
      secure: isSecure(req),
      bodyPace: options.admission?.bodyPace,
      sendPace: options.admission?.sendPace,
    };
    await refuseBlockedPublicAcl(request, (orgId, name) => access.ownBucket(orgId, name));
    const handler = route(request);
    // The bucket's policy judges what the request does with it (access.ts): its action, on its object.
    const action = actionOf(request);
    // An unsigned request makes no bucket, and owns none to list (ListBuckets answers it none).
    if (caller.anonymous && request.bucketName !== '' && (action === undefined || action === 's3:CreateBucket')) throw accessDenied();
    if (action !== undefined) {
      const use = useOf(request, action, request.key === '' ? undefined : request.key, request.query.get('versionId') ?? undefined);
      request.access = { ...access, bucket: (caller, name, asked) => access.bucket(caller, name, asked ?? use) };
    }
    // A browser's real request gets its bucket's CORS headers, on errors too (the page reads those).
    // An unsigned one names no organization: the bucket is found as a preflight finds it.
    if (req.headers.origin !== undefined && request.bucketName !== '') {
      const bucket = caller.anonymous
        ? await servedBucketsNamed(request.bucketName, { store, platform: options.platform }).then((served) =>
            served.length === 1 ? served[0] : undefined,
          )
        : await access.ownBucket(caller.orgId, request.bucketName);
      if (bucket) applyCors(req, res, bucket);
    }
    await handler(request);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const requestId = randomIdBytes(8).toString('hex').toUpperCase();
    res.setHeader('x-amz-request-id', requestId);
    res.setHeader('Server', 'cloud-platform-s3');
    const start = () => void handle(req, res, requestId).catch((error: unknown) => answerError(req, res, error, requestId, log));
    if (options.admission) options.admission.admit(res, start, (refusal) => answerError(req, res, refusal, requestId, log));
    else start();
  };
  const server = options.tls ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest) : http.createServer(onRequest);
  // `Expect: 100-continue` (the SDK's large uploads): the client sends the body only once asked
  // for it, after the signature and the quota reservation passed (payload.ts), so a refused
  // upload costs no transfer.
  server.on('checkContinue', onRequest);
  // Any other Expect is ignored, as S3 ignores it (Node would answer 417 Expectation Failed).
  server.on('checkExpectation', onRequest);
  // Large objects stream for as long as they take; a body that stops coming is ended (stall.ts).
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // Uploads in flight are cut: what they wrote is swept at the next start.
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      }),
  };
}

/** The object sub-resources offered, by sub-resource and method; every other pair is 501. */
const OBJECT_SUB_RESOURCE_OPERATIONS: Partial<Record<ObjectSubResource, Partial<Record<string, S3Handler>>>> = {
  retention: objectLockRoutes.retention,
  'legal-hold': objectLockRoutes.legalHold,
};

/** The bucket a raw path names (its first segment, decoded). */
function bucketOf(rawPath: string): string {
  const path = decodePath(rawPath.replace(/^\/+/, ''));
  const slash = path.indexOf('/');
  return slash < 0 ? path : path.slice(0, slash);
}

/** Whether a raw path names a bucket alone (`/bucket` or `/bucket/`). */
const isBucketPath = (rawPath: string): boolean => /^\/+[^/]+\/?$/.test(rawPath);

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    throw new S3Error('InvalidURI', 400, "Couldn't parse the specified URI.");
  }
}

/**
 * Whether an error that is no query's is the client's going away: its socket closed under a write
 * (ECANCELED, EPIPE), its body cut short, or a reset of its own connection, while receiving the
 * body or the answer. A reset of the database's connection has the same code, but its client's
 * socket is still open: that one is an outage.
 */
export function clientGone(req: IncomingMessage, res: ServerResponse, code: string | undefined): boolean {
  if (code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ABORTED' || code === 'ECANCELED' || code === 'EPIPE') return true;
  return code === 'ECONNRESET' && ((!req.complete && req.destroyed) || res.destroyed || req.socket?.destroyed === true);
}

function answerError(req: IncomingMessage, res: ServerResponse, error: unknown, requestId: string, log: Logger): void {
  let s3: S3Error;
  if (error instanceof S3Error) s3 = error;
  else if (error instanceof StoreRefusal) s3 = new S3Error(error.code, REFUSAL_STATUS[error.code], error.message);
  else {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    const unavailable = unavailableError(error);
    // A client gone mid-request (its socket closed under a write: ECANCELED, EPIPE, or a reset of the
    // request's own connection) is no fault of ours; a reset of the database's (the same code, on an
    // error a query failed with) is an outage, answered 503 for the client to retry. A failed query
    // also ends the request's body stream, which then looks cut: the query's error decides.
    if (!isDatabaseError(error) && clientGone(req, res, code)) {
      s3 = new S3Error('IncompleteBody', 400, 'The request body ended before its declared length');
    } else if (unavailable) {
      log.warn({ reason: (error as Error).message, method: req.method }, 'the database is unavailable; answered 503');
      s3 = unavailable;
    } else {
      log.error({ err: error, method: req.method }, 's3 request failed');
      s3 = new S3Error('InternalError', 500, 'We encountered an internal error. Please try again.');
    }
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body =
    req.method === 'HEAD'
      ? undefined
      : document('Error', { Code: s3.code, Message: s3.message, ...s3.details, RequestId: requestId }).replace(
          ` xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`,
          '',
        );
  res.statusCode = s3.status;
  for (const [name, value] of Object.entries(s3.headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/xml');
  // A body we stopped reading is read to its end first, or the connection closes after the
  // answer (unread-body.ts).
  answerAfterBody(req, res, s3.code === 'RequestTimeout', () => res.end(body));
}
