import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EmbeddedObjectStore } from '../store.ts';
import type { Access, Caller } from './access.ts';
import { S3Error } from './errors.ts';
import type { SignedRequest } from './sigv4.ts';

/** One authenticated S3 request, as the handlers see it. */
export interface S3Request {
  req: IncomingMessage;
  res: ServerResponse;
  caller: Caller;
  signed: SignedRequest;
  signingKey: Buffer;
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
  /** The request came over TLS (the endpoint's own, or a proxy's it is told to trust): SSE-C needs it. */
  secure: boolean;
}

export type S3Handler = (request: S3Request) => Promise<void>;

/** Sends an XML answer. */
export function sendXml(res: ServerResponse, status: number, xml: string, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/xml');
  res.setHeader('Content-Length', Buffer.byteLength(xml));
  res.end(xml);
}

/** Reads a small request body (Delete, CompleteMultipartUpload): at most `limit` bytes. */
export async function smallBody(req: IncomingMessage, res: ServerResponse, limit = 2 * 1024 * 1024): Promise<Buffer> {
  if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new S3Error('MaxMessageLengthExceeded', 400, 'Your request was too big.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
