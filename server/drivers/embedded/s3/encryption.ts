import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { SealingRequest } from '../objects.ts';
import type { ServedBucket, StoredUpload, StoredVersion, VersionEncryption } from '../rows.ts';
import type { WrappingKey } from '../sealing.ts';
import { S3Error, invalidArgument, notImplemented } from './errors.ts';
import { checkedBody } from './config-body.ts';
import { sendXml, clearingBucketSetting, settingAudit, type S3Handler } from './request.ts';
import { blocks, document, text } from './xml.ts';

/**
 * Server-side encryption on the S3 endpoint. SSE-S3 (`x-amz-server-side-encryption: AES256`, or
 * the bucket's default encryption): the bytes are sealed at rest under a data key the platform's
 * key wraps. SSE-C (`x-amz-server-side-encryption-customer-*`): the customer's key wraps the data
 * key and is never stored (only its MD5, which S3 answers with), so reading needs the same key;
 * it is taken only over TLS, as AWS takes it, since the key travels in a header. SSE-KMS is not
 * offered: refused, never ignored.
 */
const SSE = 'x-amz-server-side-encryption';
const CUSTOMER = 'x-amz-server-side-encryption-customer-';
const COPY_SOURCE_CUSTOMER = 'x-amz-copy-source-server-side-encryption-customer-';
const KMS_KEY_ID = 'x-amz-server-side-encryption-aws-kms-key-id';
const KMS_VALUES = new Set(['aws:kms', 'aws:kms:dsse']);

/** Where a request's encryption parameters come from: its headers (a POST form's fields stand for them) and whether it came over TLS. */
export interface EncryptionSource {
  req: { headers: IncomingHttpHeaders };
  secure: boolean;
}

const header = (request: EncryptionSource, name: string): string | undefined => {
  const value = request.req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

interface CustomerKey {
  key: Buffer;
  md5: string;
}

const sseC = (message: string) => invalidArgument(`Requests specifying Server Side Encryption with Customer provided keys must ${message}`);

/** The SSE-C key a request gives (its own headers, or a copy's source's), checked; undefined when it gives none. */
function customerKeyOf(request: EncryptionSource, prefix: string): CustomerKey | undefined {
  const algorithm = header(request, `${prefix}algorithm`);
  const encoded = header(request, `${prefix}key`);
  const md5 = header(request, `${prefix}key-md5`);
  if (algorithm === undefined && encoded === undefined && md5 === undefined) return undefined;
  if (!request.secure)
    throw new S3Error(
      'InvalidRequest',
      400,
      'Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.',
    );
  if (algorithm === undefined) throw sseC('provide a valid encryption algorithm.');
  if (algorithm.trim() !== 'AES256')
    throw new S3Error(
      'InvalidEncryptionAlgorithmError',
      400,
      'The encryption request you specified is not valid. The valid value is AES256.',
    );
  if (encoded === undefined) throw sseC('provide an appropriate secret key.');
  const key = Buffer.from(encoded.trim(), 'base64');
  if (key.length !== 32 || key.toString('base64') !== encoded.trim())
    throw invalidArgument('The secret key was invalid for the specified algorithm.', `${prefix}key`, '');
  if (md5 === undefined) throw sseC('provide the client calculated MD5 of the secret key.');
  const computed = createHash('md5').update(key).digest('base64');
  if (computed !== md5.trim()) throw invalidArgument('The calculated MD5 hash of the key did not match the hash that was provided.');
  return { key, md5: computed };
}

/** Refuses SSE-KMS, which is not offered (after the conflicts S3 answers with InvalidArgument). */
function refuseKms(): never {
  throw notImplemented('Server-side encryption with AWS KMS keys (SSE-KMS)');
}

/**
 * How a write (PutObject, CopyObject's destination, CreateMultipartUpload, a POST form) seals its
 * bytes: what its headers ask for, else the bucket's default encryption; undefined: stored plain.
 */
export function writeEncryption(request: EncryptionSource, bucket: Pick<ServedBucket, 'default_encryption'>): SealingRequest | undefined {
  const sse = header(request, SSE)?.trim();
  // The conflict is S3's InvalidArgument whatever the connection (before SSE-C's own checks).
  if (sse !== undefined && ['algorithm', 'key', 'key-md5'].some((name) => header(request, `${CUSTOMER}${name}`) !== undefined))
    throw invalidArgument('Server Side Encryption with Customer provided key is incompatible with the encryption method specified');
  const customer = customerKeyOf(request, CUSTOMER);
  if (header(request, KMS_KEY_ID) !== undefined && (sse === undefined || !KMS_VALUES.has(sse)))
    throw invalidArgument('Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms');
  if (sse !== undefined && KMS_VALUES.has(sse)) refuseKms();
  if (sse !== undefined && sse !== 'AES256') throw invalidArgument('The encryption method specified is not supported', SSE, sse);
  if (customer) return { wrapping: { by: 'customer', key: customer.key }, record: { algorithm: 'AES256', customerKeyMd5: customer.md5 } };
  if (sse === 'AES256' || bucket.default_encryption === 'AES256') return { wrapping: { by: 'platform' }, record: { algorithm: 'AES256' } };
  return undefined;
}

/** The key that opens a version read by GET or HEAD: the SSE-C key it needs, checked; undefined for other versions. */
export function readKey(request: EncryptionSource, version: StoredVersion): Buffer | undefined {
  if (header(request, SSE) !== undefined) throw invalidArgument('x-amz-server-side-encryption header is not supported for this operation.');
  return keyForVersion(customerKeyOf(request, CUSTOMER), version.encryption);
}

/** The key that opens a copy's source (its `x-amz-copy-source-server-side-encryption-customer-*` headers). */
export function copySourceKey(request: EncryptionSource, version: StoredVersion): Buffer | undefined {
  return keyForVersion(customerKeyOf(request, COPY_SOURCE_CUSTOMER), version.encryption);
}

function keyForVersion(given: CustomerKey | undefined, encryption: VersionEncryption | null): Buffer | undefined {
  const wanted = encryption?.customerKeyMd5;
  if (wanted === undefined) {
    if (given) throw new S3Error('InvalidRequest', 400, 'The encryption parameters are not applicable to this object.');
    return undefined;
  }
  if (!given)
    throw new S3Error(
      'InvalidRequest',
      400,
      'The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.',
    );
  // The same 400 as Ceph's gateway (AWS answers 403): the key is not the one the object was written with.
  if (given.md5 !== wanted) throw invalidArgument('The provided customer key does not match the key the object was encrypted with.');
  return given.key;
}

/**
 * The wrapping key of a part (UploadPart, UploadPartCopy) of an upload: the upload's SSE-C key,
 * which every part and the completion must give again, or the platform's for SSE-S3.
 */
export function partWrapping(request: EncryptionSource, upload: Pick<StoredUpload, 'encryption'>): WrappingKey | undefined {
  const given = customerKeyOf(request, CUSTOMER);
  if (!upload.encryption) {
    if (given) throw new S3Error('InvalidRequest', 400, 'The encryption parameters are not applicable to this upload.');
    return undefined;
  }
  const key = keyForVersion(given, upload.encryption);
  return key ? { by: 'customer', key } : { by: 'platform' };
}

/** CompleteMultipartUpload of an SSE-C upload gives the upload's key again (and no other upload's completion gives one). */
export function assertCompletionKey(request: EncryptionSource, upload: Pick<StoredUpload, 'encryption'>): void {
  keyForVersion(customerKeyOf(request, CUSTOMER), upload.encryption);
}

/** The headers S3 answers a write or a read of a sealed version (or upload) with. */
export function encryptionHeaders(encryption: VersionEncryption | null | undefined): Record<string, string> {
  if (!encryption) return {};
  if (encryption.customerKeyMd5 !== undefined)
    return { [`${CUSTOMER}algorithm`]: encryption.algorithm, [`${CUSTOMER}key-MD5`]: encryption.customerKeyMd5 };
  return { [SSE]: encryption.algorithm };
}

const MALFORMED = () =>
  new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');

/** PutBucketEncryption: a default of SSE-S3 (AES256); SSE-KMS is not offered. */
const putBucketEncryption: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const xml = await checkedBody(request);
  const rules = blocks(xml, 'Rule');
  if (!xml.includes('ServerSideEncryptionConfiguration') || rules.length !== 1) throw MALFORMED();
  const algorithm = text(rules[0]!, 'SSEAlgorithm');
  if (algorithm === undefined) throw MALFORMED();
  if (KMS_VALUES.has(algorithm)) refuseKms();
  if (algorithm !== 'AES256') throw invalidArgument('The encryption method specified is not supported', 'SSEAlgorithm', algorithm);
  if (text(rules[0]!, 'KMSMasterKeyID') !== undefined) throw invalidArgument('A KMS key id needs SSEAlgorithm aws:kms');
  await request.store.settings.setDefaultEncryption(
    bucket.id,
    'AES256',
    settingAudit(request, bucket, 'encryption', bucket.default_encryption, 'AES256'),
  );
  request.res.statusCode = 200;
  request.res.end();
};

const getBucketEncryption: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  if (bucket.default_encryption === null)
    throw new S3Error('ServerSideEncryptionConfigurationNotFoundError', 404, 'The server side encryption configuration was not found', {
      BucketName: bucket.name,
    });
  sendXml(
    request.res,
    200,
    document('ServerSideEncryptionConfiguration', {
      Rule: { ApplyServerSideEncryptionByDefault: { SSEAlgorithm: bucket.default_encryption }, BucketKeyEnabled: false },
    }),
  );
};

const deleteBucketEncryption = clearingBucketSetting(
  'encryption',
  (bucket) => bucket.default_encryption,
  (request, bucketId, audit) => request.store.settings.setDefaultEncryption(bucketId, null, audit),
);

export const bucketEncryptionRoutes = {
  GET: getBucketEncryption,
  PUT: putBucketEncryption,
  DELETE: deleteBucketEncryption,
};
