// Helpers of the S3 endpoint tests: a real server with the embedded object store, buckets and
// access keys made through the platform API, and S3 clients of the official SDK as it behaves
// by default (checksums, aws-chunked uploads).
import { S3Client } from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { Agent } from 'node:http';
import path from 'node:path';
import { expect } from 'vitest';
import { NodeSha256 } from '../../../../../server/drivers/rgw/signed-http.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../../support/server.ts';

export const MiB = 1024 * 1024;

/** The files under `folder`, however deep (its subfolders left out), as sorted paths; none when it is not there. */
export function filesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

/** A server whose object store is the embedded one, with its S3 endpoint. */
export async function startS3Server(env: Record<string, string> = {}): Promise<TestServer & { s3Url: string }> {
  const server = await startTestServer({ OBJECT_STORE_DRIVER: 'embedded', ...env });
  if (!server.s3Url) throw new Error('the server started no S3 endpoint');
  return server as TestServer & { s3Url: string };
}

/** A bucket created through the API, waited for until active. */
export async function createBucket(server: TestServer, org: TestOrg, name: string, options: { versioning?: boolean } = {}) {
  const created = await org.call('POST', '/s3/buckets', { body: { name, versioning: options.versioning ?? false } });
  expect(created.status, created.text).toBe(202);
  const operation = await server.waitForOperation(org, created.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
  return created.body.bucket as { id: string; name: string };
}

/** Sets a bucket's quota through the API and waits for the store to enforce it. */
export async function setBucketQuota(
  server: TestServer,
  org: TestOrg,
  bucketId: string,
  quota: { max_objects?: number | null; max_size_bytes?: number | null },
) {
  const changed = await org.call('PUT', `/s3/buckets/${bucketId}/quota`, { body: quota });
  expect(changed.status, changed.text).toBe(202);
  const operation = await server.waitForOperation(org, changed.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
}

export interface IssuedKey {
  keyId: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** An S3 access key created through the API, active. */
export async function createAccessKey(server: TestServer, org: TestOrg): Promise<IssuedKey> {
  const created = await org.call('POST', '/s3/access-keys');
  expect(created.status, created.text).toBe(202);
  const operation = await server.waitForOperation(org, created.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
  const key = await org.call('GET', '/s3/access-keys');
  const record = key.body.items.find((item: { id: string }) => item.id === created.body.access_key.id);
  return { keyId: record.id, accessKeyId: record.objectstore_access_key_id, secretAccessKey: created.body.secret_access_key };
}

/** The SDK's client as a user configures it for this endpoint (path-style), otherwise its defaults. */
/**
 * The test clients make one attempt per call (each answer is what the store said), so they use no
 * kept-alive connection: the store closes one left idle for 5 s, and a request sent on it as it
 * closes fails with a reset a real client would retry. How long a test leaves a connection idle
 * depends on the machine.
 */
export const ONE_CONNECTION_PER_REQUEST = new Agent({ keepAlive: false });

export function s3Client(server: { s3Url: string }, key: Pick<IssuedKey, 'accessKeyId' | 'secretAccessKey'>): S3Client {
  return new S3Client({
    endpoint: server.s3Url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
    maxAttempts: 1,
    requestHandler: { httpAgent: ONE_CONNECTION_PER_REQUEST },
  });
}

/** The S3 error code of a failed SDK call (and its HTTP status). */
export async function s3ErrorOf(promise: Promise<unknown>): Promise<{ code: string; status: number | undefined }> {
  try {
    await promise;
  } catch (error) {
    const failure = error as { name: string; Code?: string; $metadata?: { httpStatusCode?: number } };
    return { code: failure.Code ?? failure.name, status: failure.$metadata?.httpStatusCode };
  }
  throw new Error('the call succeeded');
}

/** Retries assertions until they hold (for figures background work brings), failing with the last miss. */
export async function settles(assertions: () => Promise<void>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await assertions();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export interface SignedAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The S3 error code of an error answer. */
  code: string | undefined;
}

/**
 * One request signed with SigV4 as written, for what the SDK has no command for (a sub-resource
 * sent to a method that does not take it, a header the SDK would not send).
 */
export async function signedRequest(
  server: { s3Url: string },
  key: Pick<IssuedKey, 'accessKeyId' | 'secretAccessKey'>,
  request: { method: string; path: string; query?: Record<string, string>; headers?: Record<string, string>; body?: string },
): Promise<SignedAnswer> {
  const base = new URL(server.s3Url);
  const signer = new SignatureV4({
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
    region: 'us-east-1',
    service: 's3',
    sha256: NodeSha256,
    uriEscapePath: false,
  });
  const escape = (text: string) =>
    encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  const path = request.path.split('/').map(escape).join('/');
  const query = request.query ?? {};
  const body = request.body;
  const signed = await signer.sign({
    method: request.method,
    protocol: base.protocol,
    hostname: base.hostname,
    port: Number(base.port),
    path,
    query,
    headers: {
      host: base.host,
      'x-amz-content-sha256': createHash('sha256')
        .update(body ?? '')
        .digest('hex'),
      ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
      ...(request.headers ?? {}),
    },
  });
  const search = Object.entries(query)
    .map(([name, value]) => (value === '' ? escape(name) : `${escape(name)}=${escape(value)}`))
    .join('&');
  const headers: Record<string, string> = { ...signed.headers };
  delete headers.host;
  delete headers['content-length'];
  const response = await fetch(`${base.origin}${path}${search ? `?${search}` : ''}`, {
    method: request.method,
    headers,
    body,
  });
  const text = await response.text();
  // The helper's own mistake, not the endpoint's answer to what the test asks.
  if (text.includes('<Code>SignatureDoesNotMatch</Code>')) throw new Error(`the test's request was signed wrongly: ${text}`);
  return { status: response.status, headers: response.headers, text, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] };
}

/** The store's egress figure of an organization: what the sweep folded, and the log it has not folded yet. */
export async function egressBytes(server: TestServer, orgId: string): Promise<number> {
  const { rows } = await server.pool.query<{ bytes: string }>(
    `SELECT egress_bytes + (SELECT coalesce(sum(bytes), 0) FROM store_egress WHERE org_id = $1) AS bytes
     FROM store_orgs WHERE org_id = $1`,
    [orgId],
  );
  return Number(rows[0]!.bytes);
}

/** A bucket policy document of `statements`, as PutBucketPolicy takes it. */
export const policy = (statements: object[]): string => JSON.stringify({ Version: '2012-10-17', Statement: statements });
