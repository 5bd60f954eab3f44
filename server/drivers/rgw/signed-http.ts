import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { TransientBackendError } from '../errors.ts';

/**
 * HTTP calls to the RADOS Gateway, signed with AWS Signature Version 4 (the Admin Ops API and the
 * S3 API take the same signature). Bodies are never hashed into the signature
 * (`X-Amz-Content-Sha256: UNSIGNED-PAYLOAD`): the Admin Ops API needs that for JSON bodies, and
 * it costs nothing elsewhere.
 *
 * A dropped connection, a timeout or a 5xx is a TransientBackendError here; any other answer is
 * returned for the caller to judge (a 404 is often the answer it wants). The gateway's words are
 * never put into an error: they stay in `RgwResponse` for the caller's decision, and go no further.
 */
export interface RgwCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface RgwRequest {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'HEAD';
  /** The path, unescaped (each segment is escaped here). */
  path: string;
  /** Query parameters; '' for a bare flag such as `?quota`. */
  query?: Record<string, string>;
  body?: string;
  headers?: Record<string, string>;
}

export interface RgwResponse {
  status: number;
  text: string;
  /** The S3-style error code (`NoSuchBucket`, `NoSuchKey`…) of an error answer, when it has one. */
  code: string | undefined;
}

export interface SignedHttp {
  send(credentials: RgwCredentials, request: RgwRequest): Promise<RgwResponse>;
}

/** Node's own SHA-256 in the shape the signer expects (a hash, or an HMAC when given a key). */
export class NodeSha256 {
  private readonly secret: SourceData | undefined;
  private hash: Hash | Hmac;

  constructor(secret?: SourceData) {
    this.secret = secret;
    this.hash = NodeSha256.start(secret);
  }

  private static start(secret: SourceData | undefined): Hash | Hmac {
    if (secret === undefined) return createHash('sha256');
    return createHmac('sha256', typeof secret === 'string' ? secret : bytesOf(secret));
  }

  update(data: SourceData): void {
    this.hash.update(typeof data === 'string' ? data : bytesOf(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }

  reset(): void {
    this.hash = NodeSha256.start(this.secret);
  }
}

type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytesOf = (data: ArrayBuffer | ArrayBufferView): Uint8Array =>
  ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

/** RFC 3986 escaping, as SigV4 canonicalizes (encodeURIComponent leaves !'()* alone). */
const escape = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);

export function createSignedHttp(options: { endpoint: string; region: string; timeoutMs: number }): SignedHttp {
  const base = new URL(options.endpoint);
  const signers = new Map<string, SignatureV4>();
  const signerOf = (credentials: RgwCredentials): SignatureV4 => {
    let signer = signers.get(credentials.accessKeyId + '\0' + credentials.secretAccessKey);
    if (!signer) {
      signer = new SignatureV4({ credentials, region: options.region, service: 's3', sha256: NodeSha256, uriEscapePath: false });
      signers.set(credentials.accessKeyId + '\0' + credentials.secretAccessKey, signer);
    }
    return signer;
  };

  return {
    async send(credentials, request) {
      const path = request.path
        .split('/')
        .map((segment) => escape(segment))
        .join('/');
      const query = request.query ?? {};
      const signed = await signerOf(credentials).sign({
        method: request.method,
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port ? Number(base.port) : undefined,
        path,
        query,
        headers: {
          host: base.host,
          'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
          ...(request.headers ?? {}),
        },
        body: request.body,
      });
      const search = Object.entries(query)
        .map(([name, value]) => (value === '' ? escape(name) : `${escape(name)}=${escape(value)}`))
        .join('&');
      const headers = { ...signed.headers };
      delete headers.host; // fetch sets it from the URL
      let response: Response;
      let text: string;
      try {
        response = await fetch(`${base.origin}${path}${search ? `?${search}` : ''}`, {
          method: request.method,
          headers,
          body: request.body,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        text = await response.text();
      } catch (error) {
        const reason = (error as Error).name === 'TimeoutError' ? 'timeout' : 'connection failed';
        throw new TransientBackendError('object store', reason);
      }
      if (response.status >= 500 || response.status === 429) {
        throw new TransientBackendError('object store', `status ${response.status}`);
      }
      return { status: response.status, text, code: errorCodeOf(text) };
    },
  };
}

/** The `Code` of an S3 XML error or of an Admin Ops JSON error. */
function errorCodeOf(text: string): string | undefined {
  const xml = /<Code>([^<]+)<\/Code>/.exec(text);
  if (xml) return xml[1];
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as { Code?: unknown };
      return typeof parsed.Code === 'string' ? parsed.Code : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
