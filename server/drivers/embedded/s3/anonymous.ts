import type { IncomingMessage } from 'node:http';
import { WindowCounter } from '../../../core/window-counter.ts';
import { S3Error, accessDenied } from './errors.ts';
import { STREAMING_UNSIGNED } from './payload.ts';
import { UNSIGNED_PAYLOAD } from './sigv4.ts';
import type { SignedRequest } from './signed-request.ts';

/**
 * Unsigned (anonymous) requests: what a browser or curl sends for a public object. They act as
 * no organization's (access.ts ANONYMOUS) and reach only what a bucket shares with everyone: an
 * AllUsers grant of its ACL or of the object's, or its policy's Allow for `"*"`, unless its public
 * access block says otherwise. What they read is egress of the bucket's organization, so they are
 * limited per client address (S3's 503 SlowDown past the limit), as the API limits requests
 * without a credential; `S3_PUBLIC_ACCESS=false` refuses them all.
 */
export interface PublicAccess {
  /** Unsigned requests per client address per window. */
  rateLimit: number;
  windowSeconds: number;
}

/** Admits an unsigned request, or refuses it: public access off, or its address over its budget. */
export function publicRequestGate(publicAccess: PublicAccess | undefined): (req: IncomingMessage) => void {
  if (!publicAccess)
    return () => {
      throw accessDenied('Anonymous access is not allowed: sign requests with an S3 access key of your organization');
    };
  const counter = new WindowCounter(publicAccess.windowSeconds * 1000);
  return (req) => {
    const { count, resetMs } = counter.hit(req.socket.remoteAddress ?? 'unknown');
    if (count > publicAccess.rateLimit) {
      throw new S3Error(
        'SlowDown',
        503,
        'Please reduce your request rate.',
        {},
        { 'Retry-After': String(Math.max(1, Math.ceil(resetMs / 1000))) },
      );
    }
  };
}

const STREAMING_SIGNED = /^STREAMING-AWS4-HMAC-SHA256-PAYLOAD/;

/**
 * What an unsigned request says of itself, in the shape a signed one has: no key, no signature, no
 * scope. Its `x-amz-content-sha256`, when a digest, is still checked against the body; a body in
 * signed aws-chunked framing cannot be, without a key (400).
 */
export function unsignedRequest(req: IncomingMessage): SignedRequest {
  const given = req.headers['x-amz-content-sha256'];
  if (typeof given === 'string' && STREAMING_SIGNED.test(given))
    throw new S3Error('InvalidRequest', 400, 'A body with chunk signatures needs a signed request');
  const payloadHash =
    typeof given === 'string' && (/^[0-9a-f]{64}$/.test(given) || given === STREAMING_UNSIGNED) ? given : UNSIGNED_PAYLOAD;
  return { accessKeyId: '', date: '', region: '', amzDate: '', signedHeaders: [], signature: '', payloadHash, presigned: false };
}
