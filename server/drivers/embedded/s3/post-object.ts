import busboy from 'busboy';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Readable, type Transform } from 'node:stream';
import { CHECKSUM_ALGORITHMS, runningChecksum, type ChecksumAlgorithm } from '../checksums.ts';
import { hashing } from '../hashing.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import { ANONYMOUS, type Access, type BucketUse, type Caller } from './access.ts';
import { assertCannedAclTaken, assertNotBlocked, cannedAcl } from './acl.ts';
import { applyCors } from './cors.ts';
import { encryptionHeaders, writeEncryption } from './encryption.ts';
import { MAX_OBJECT_TAGS, tagsOfDocument } from './tagging.ts';
import { S3Error, accessDenied, invalidArgument, notImplemented } from './errors.ts';
import { writeLock } from './object-lock.ts';
import { signingKey } from './sigv4.ts';
import { document } from './xml.ts';
import { askForBody } from './unread-body.ts';

/**
 * Browser uploads (POST /bucket with a multipart/form-data form): the form carries the key, the
 * object's metadata, a base64 policy document and its signature (SigV4, `x-amz-signature` over the
 * policy with the key's signing key of the day; or the older `signature`, HMAC-SHA1 of the policy),
 * then the file. The policy says until when it holds and what each field may be (`eq`,
 * `starts-with`, `content-length-range`); every field must be named by a condition, as S3 wants.
 * The file streams into the store like a PUT's body; its length is known only at its end, so
 * the space reserved for it is what the form (or the policy's range) allows at most.
 */
const STORED_FIELDS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'];
/** Fields no condition needs to name (AWS's list, and checksums, which are verified instead). */
const EXEMPT = (name: string): boolean =>
  ['policy', 'x-amz-signature', 'signature', 'awsaccesskeyid', 'file'].includes(name) ||
  name.startsWith('x-ignore-') ||
  name.startsWith('x-amz-checksum-');
/** The longest field value read (S3's form fields are small; the file is not a field). */
const FIELD_LIMIT = 1024 * 1024;
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

const invalidPolicy = (why: string) => new S3Error('InvalidPolicyDocument', 400, `Invalid Policy: ${why}`);
const policyFailed = (why: string) => accessDenied(`Invalid according to Policy: ${why}`);

interface Form {
  /** Field values by lower-case name (the first of a repeated field). */
  fields: Map<string, string>;
  file: { stream: Readable; filename: string };
  /** Resolves once the whole request is read (fields after the file are not used, as S3 ignores them). */
  finished: Promise<void>;
}

/** Reads the form up to its file. */
function readForm(req: IncomingMessage): Promise<Form> {
  return new Promise<Form>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { fields: 1000, fieldSize: FIELD_LIMIT } });
    } catch {
      reject(new S3Error('MalformedPOSTRequest', 400, 'The body of your POST request is not well-formed multipart/form-data.'));
      return;
    }
    const fields = new Map<string, string>();
    let settled = false;
    const finished = new Promise<void>((done, failed) => {
      parser.on('close', () => done());
      parser.on('error', (error) => failed(error as Error));
    });
    finished.catch(() => {});
    parser.on('field', (name, value) => {
      const lower = name.toLowerCase();
      if (!fields.has(lower)) fields.set(lower, value);
    });
    // Some clients send every field as a file part (with a filename): those are fields all the same.
    const fieldParts: Array<Promise<void>> = [];
    parser.on('file', (name, stream, info) => {
      const lower = name.toLowerCase();
      if (settled) {
        stream.resume();
        return;
      }
      if (lower !== 'file') {
        const chunks: Buffer[] = [];
        let size = 0;
        fieldParts.push(
          new Promise<void>((done) => {
            stream.on('data', (chunk: Buffer) => {
              size += chunk.length;
              if (size <= FIELD_LIMIT) chunks.push(chunk);
            });
            stream.on('end', () => {
              if (!fields.has(lower)) fields.set(lower, Buffer.concat(chunks).toString('utf8'));
              done();
            });
            stream.on('error', () => done());
          }),
        );
        return;
      }
      settled = true;
      void Promise.all(fieldParts).then(() => resolve({ fields, file: { stream, filename: info.filename ?? '' }, finished }));
    });
    parser.on('close', () => {
      if (!settled) reject(invalidArgument('POST requires exactly one file upload per request.', 'file', '0'));
    });
    parser.on('error', () => {
      if (!settled)
        reject(new S3Error('MalformedPOSTRequest', 400, 'The body of your POST request is not well-formed multipart/form-data.'));
    });
    req.pipe(parser);
  });
}

interface Policy {
  expiration: Date;
  conditions: Condition[];
}

type Condition = { kind: 'eq' | 'starts-with'; field: string; value: string } | { kind: 'length'; min: number; max: number };

function parsePolicy(encoded: string): Policy {
  let document: unknown;
  try {
    document = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  } catch {
    throw invalidPolicy('the policy is not base64-encoded JSON');
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw invalidPolicy('the policy is not a JSON object');
  const { expiration, conditions } = document as { expiration?: unknown; conditions?: unknown };
  if (typeof expiration !== 'string' || !ISO_INSTANT.test(expiration))
    throw invalidPolicy("Invalid 'expiration' value: an ISO 8601 UTC instant");
  if (!Array.isArray(conditions)) throw invalidPolicy("Missing or invalid 'conditions'");
  return { expiration: new Date(expiration), conditions: conditions.map(parseCondition) };
}

function parseCondition(raw: unknown): Condition {
  if (Array.isArray(raw)) {
    const [operation, first, second] = raw as unknown[];
    if (typeof operation !== 'string') throw invalidPolicy('a condition names no operation');
    if (operation.toLowerCase() === 'content-length-range') {
      const min = Number(first);
      const max = Number(second);
      if (raw.length !== 3 || !Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || max < min)
        throw invalidPolicy('content-length-range takes two integers, 0 <= min <= max');
      return { kind: 'length', min, max };
    }
    const kind = operation.toLowerCase();
    if (raw.length !== 3 || (kind !== 'eq' && kind !== 'starts-with') || typeof first !== 'string' || typeof second !== 'string')
      throw invalidPolicy(`Invalid condition ${JSON.stringify(raw)}`);
    if (!first.startsWith('$')) throw invalidPolicy(`A condition's field starts with $: ${first}`);
    return { kind, field: first.slice(1).toLowerCase(), value: second };
  }
  if (typeof raw === 'object' && raw !== null) {
    const entries = Object.entries(raw);
    if (entries.length !== 1 || typeof entries[0]![1] !== 'string') throw invalidPolicy(`Invalid condition ${JSON.stringify(raw)}`);
    return { kind: 'eq', field: entries[0]![0].toLowerCase(), value: entries[0]![1] };
  }
  throw invalidPolicy(`Invalid condition ${JSON.stringify(raw)}`);
}

/** Checks the form against the policy's conditions; returns the content-length range it allows. */
function checkConditions(policy: Policy, values: Map<string, string>): { min: number; max: number } {
  if (policy.expiration.getTime() <= Date.now()) throw policyFailed('Policy expired.');
  const covered = new Set<string>();
  let range = { min: 0, max: Number.POSITIVE_INFINITY };
  for (const condition of policy.conditions) {
    if (condition.kind === 'length') {
      range = { min: Math.max(range.min, condition.min), max: Math.min(range.max, condition.max) };
      continue;
    }
    covered.add(condition.field);
    // A field the form leaves out is empty: ["starts-with", "$field", ""] allows it to be absent, as S3 does.
    const value = values.get(condition.field) ?? '';
    const holds = condition.kind === 'eq' ? value === condition.value : value.startsWith(condition.value);
    if (!holds) throw policyFailed(`Policy Condition failed: ["${condition.kind}", "$${condition.field}", "${condition.value}"]`);
  }
  for (const name of values.keys()) if (!EXEMPT(name) && !covered.has(name)) throw policyFailed(`Extra input fields: ${name}`);
  return range;
}

/** The key the form signs with, checked: SigV4 (`x-amz-*` fields) or the older `AWSAccessKeyId`/`signature`. */
async function formCaller(fields: Map<string, string>, deps: PostObjectDependencies): Promise<Caller> {
  const { access } = deps;
  const policy = fields.get('policy');
  const v4 = fields.has('x-amz-algorithm') || fields.has('x-amz-credential') || fields.has('x-amz-signature');
  // An unsigned form is anonymous: it writes only where a bucket lets everyone write (anonymous.ts).
  if (!v4 && !fields.has('awsaccesskeyid')) {
    deps.admitUnsigned();
    return ANONYMOUS;
  }
  if (policy === undefined) throw invalidArgument("Bucket POST must contain a field named 'policy'.", 'policy', '');
  if (v4) {
    const algorithm = fields.get('x-amz-algorithm');
    const credential = fields.get('x-amz-credential') ?? '';
    const signature = fields.get('x-amz-signature');
    const date = fields.get('x-amz-date');
    if (algorithm !== 'AWS4-HMAC-SHA256') throw invalidArgument('Only AWS4-HMAC-SHA256 signs a form', 'x-amz-algorithm', algorithm ?? '');
    if (signature === undefined) throw invalidArgument("Bucket POST must contain a field named 'x-amz-signature'.", 'x-amz-signature', '');
    if (date === undefined) throw invalidArgument("Bucket POST must contain a field named 'x-amz-date'.", 'x-amz-date', '');
    const [accessKeyId, day, region, service, terminal] = credential.split('/');
    if (!accessKeyId || !day || !region || service !== 's3' || terminal !== 'aws4_request' || !date.startsWith(day))
      throw invalidArgument('The x-amz-credential field is malformed', 'x-amz-credential', credential);
    const caller = await access.caller(accessKeyId);
    const expected = createHmac('sha256', signingKey(caller.secret, day, region))
      .update(policy)
      .digest('hex');
    if (!sameText(expected, signature.toLowerCase())) throw signatureMismatch();
    return caller;
  }
  const signature = fields.get('signature');
  if (signature === undefined) throw invalidArgument("Bucket POST must contain a field named 'signature'.", 'signature', '');
  const caller = await access.caller(fields.get('awsaccesskeyid')!);
  const expected = createHmac('sha1', caller.secret).update(policy).digest('base64');
  if (!sameText(expected, signature)) throw signatureMismatch();
  return caller;
}

/** The use an unsigned form makes of the bucket, as its ACL and policy judge it: a PutObject of its key. */
const anonymousPut = (req: IncomingMessage, key: string): BucketUse => ({
  action: 's3:PutObject',
  key,
  principal: { orgId: ANONYMOUS.orgId, accessKeyId: '', anonymous: true },
  value: async (name) => (name === 'aws:sourceip' ? req.socket.remoteAddress : undefined),
});

const signatureMismatch = () =>
  new S3Error('SignatureDoesNotMatch', 403, 'The request signature we calculated does not match the signature you provided.');

function sameText(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** What the form asks beyond what is offered: refused, never dropped. */
function refuseUnoffered(fields: Map<string, string>): void {
  if (fields.has('x-amz-website-redirect-location')) throw notImplemented('Website redirects');
  const storageClass = fields.get('x-amz-storage-class');
  if (storageClass !== undefined && storageClass.trim() !== 'STANDARD')
    throw new S3Error('InvalidStorageClass', 400, 'The storage class you specified is not valid', { StorageClassRequested: storageClass });
}

/** The answer's redirect: success_action_redirect (or the older `redirect`) with the object named in its query. */
function redirectOf(fields: Map<string, string>, bucket: string, key: string, etag: string): string | undefined {
  const target = fields.get('success_action_redirect') ?? fields.get('redirect');
  if (!target) return undefined;
  try {
    const url = new URL(target);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  } catch {
    return undefined;
  }
  const query = `bucket=${encodeURIComponent(bucket)}&key=${encodeURIComponent(key)}&etag=${encodeURIComponent(`"${etag}"`)}`;
  return `${target}${target.includes('?') ? '&' : '?'}${query}`;
}

export interface PostObjectDependencies {
  store: EmbeddedObjectStore;
  access: Access;
  /** Admits an unsigned form, or throws (public access off, or the address over its limit). */
  admitUnsigned(): void;
  /** The request came over TLS (SSE-C fields need it). */
  secure: boolean;
  /** A stream that paces the file's bytes while the API is busy (admission.ts), if any. */
  bodyPace?: () => Transform;
}

export async function postObject(
  req: IncomingMessage,
  res: ServerResponse,
  bucketName: string,
  deps: PostObjectDependencies,
): Promise<void> {
  if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? ''))
    throw new S3Error('PreconditionFailed', 412, 'Bucket POST must be of the enclosure-type multipart/form-data', {
      Condition: 'Bucket POST must be of the enclosure-type multipart/form-data',
    });
  const declared = Number(req.headers['content-length']);
  if (req.headers['content-length'] === undefined || !Number.isSafeInteger(declared))
    throw new S3Error('MissingContentLength', 411, 'You must provide the Content-Length HTTP header.');
  askForBody(req, res);
  const form = await readForm(req);
  const { fields } = form;
  try {
    const caller = await formCaller(fields, deps);
    const rawKey = fields.get('key');
    if (rawKey === undefined || rawKey === '')
      throw invalidArgument(
        "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.",
        'key',
        '',
      );
    const key = rawKey.replaceAll('${filename}', form.file.filename);
    if (Buffer.byteLength(key) > 1024) throw new S3Error('KeyTooLongError', 400, 'Your key is too long');
    const bucket = await deps.access.bucket(caller, bucketName, caller.anonymous ? anonymousPut(req, key) : undefined);
    applyCors(req, res, bucket);
    const values = new Map(fields);
    values.set('key', key);
    // The bucket is the one posted to, whatever a field says: the policy must name it. An unsigned
    // form needs no policy; one it carries still binds it.
    values.set('bucket', bucketName);
    const policy = fields.get('policy');
    const range = policy === undefined ? { min: 0, max: declared } : checkConditions(parsePolicy(policy), values);
    refuseUnoffered(fields);
    const cannedField = fields.get('acl')?.trim();
    const acl = cannedField === undefined ? undefined : cannedAcl(cannedField, bucket.org_id);
    assertCannedAclTaken(cannedField, bucket);
    assertNotBlocked(acl, bucket);

    // The fields stand for the headers a PUT would carry.
    const headers: IncomingHttpHeaders = Object.fromEntries(fields);
    const sealing = writeEncryption({ req: { headers }, secure: deps.secure }, bucket);
    const lock = writeLock(headers, bucket);
    const stored: Record<string, string> = {};
    for (const [name, value] of fields) if (name.startsWith('x-amz-meta-') || STORED_FIELDS.includes(name)) stored[name] = value;

    const checksums = new Map<ChecksumAlgorithm, { expected: string; running: ReturnType<typeof runningChecksum> }>();
    for (const algorithm of CHECKSUM_ALGORITHMS) {
      const expected = fields.get(`x-amz-checksum-${algorithm}`);
      if (expected !== undefined) checksums.set(algorithm, { expected, running: runningChecksum(algorithm) });
    }
    const limit = Math.min(declared, range.max);
    let received = 0;
    const body = Readable.from(
      (async function* () {
        for await (const chunk of form.file.stream as AsyncIterable<Buffer>) {
          received += chunk.length;
          if (received > range.max) throw new S3Error('EntityTooLarge', 400, 'Your proposed upload exceeds the maximum allowed size');
          for (const { running } of checksums.values()) running.update(chunk);
          yield chunk;
        }
      })(),
      { objectMode: false },
    );
    const hashes = hashing(['md5'], limit);
    // The tagging field is a Tagging document, as PutObjectTagging's body (checked as it is).
    const tagging = fields.get('tagging');
    const tags = tagging === undefined ? [] : tagsOfDocument(tagging, MAX_OBJECT_TAGS);
    const version = await deps.store.objects.putObject({
      orgId: bucket.org_id,
      bucketId: bucket.id,
      key,
      contentType: fields.get('content-type') ?? null,
      headers: stored,
      tags,
      acl,
      size: limit,
      sizeIsLimit: true,
      body,
      transforms: [...(deps.bodyPace ? [deps.bodyPace()] : []), hashes.transform],
      readEarly: true,
      sealing,
      lock,
      async digests() {
        const digests = await hashes.result();
        if (received < range.min) throw new S3Error('EntityTooSmall', 400, 'Your proposed upload is smaller than the minimum allowed size');
        const verified: Record<string, string> = {};
        for (const [algorithm, { expected, running }] of checksums) {
          const value = running.digest();
          if (value !== expected.trim())
            throw new S3Error('BadDigest', 400, `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
          verified[algorithm] = value;
        }
        return { etag: digests.get('md5')!.toString('hex'), checksums: verified };
      },
    });
    await form.finished.catch(() => {});

    const location = `${deps.secure ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}/${encodeURIComponent(bucketName)}/${encodeURIComponent(key).replace(/%2F/g, '/')}`;
    res.setHeader('ETag', `"${version.etag}"`);
    res.setHeader('Location', location);
    if (bucket.versioning) res.setHeader('x-amz-version-id', version.version_id);
    for (const [name, value] of Object.entries(encryptionHeaders(version.encryption))) res.setHeader(name, value);
    const redirect = redirectOf(fields, bucketName, key, version.etag ?? '');
    const status = fields.get('success_action_status');
    if (redirect) {
      res.statusCode = 303;
      res.setHeader('Location', redirect);
      res.end();
    } else if (status === '201') {
      const xml = document('PostResponse', { Location: location, Bucket: bucketName, Key: key, ETag: `"${version.etag}"` });
      res.statusCode = 201;
      res.setHeader('Content-Type', 'application/xml');
      res.end(xml);
    } else {
      res.statusCode = status === '200' ? 200 : 204;
      res.end();
    }
  } finally {
    // A refused form is not read on: its file is discarded as it comes.
    form.file.stream.resume();
  }
}
