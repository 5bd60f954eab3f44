import type { IncomingHttpHeaders } from 'node:http';

/** What a request's signature says, whichever version signed it (sigv4.ts, sigv2.ts). */
export interface SignedRequest {
  accessKeyId: string;
  /** yyyymmdd of the credential scope. */
  date: string;
  region: string;
  /** x-amz-date (yyyymmddThhmmssZ). */
  amzDate: string;
  signedHeaders: string[];
  signature: string;
  /** The payload hash the canonical request carries (hex, UNSIGNED-PAYLOAD, STREAMING-…). */
  payloadHash: string;
  presigned: boolean;
  /** Signature Version 2 (sigv2.ts): no scope, no signed payload, no chunk signatures. */
  version?: 2;
}

export interface RequestParts {
  method: string;
  /** The path as sent (still percent-encoded), without the query. */
  rawPath: string;
  /** The query as sent, without '?'. */
  rawQuery: string;
  headers: IncomingHttpHeaders;
}
