import { S3Error, notImplemented } from './errors.ts';
import type { S3Request } from './request.ts';
import type { ServedBucket } from '../rows.ts';

/**
 * The sub-resources of an object in the S3 API reference: a query parameter that makes a request
 * about something other than the object's bytes (`PUT /b/k?tagging` sets tags; it must never
 * store the Tagging XML as the object). `uploads` and `uploadId` are multipart uploads, served
 * by multipart-handlers.ts; `partNumber` without `uploadId` asks GetObject for one part.
 */
export const OBJECT_SUB_RESOURCES = [
  'acl',
  'attributes',
  'legal-hold',
  'partNumber',
  'renameObject',
  'restore',
  'retention',
  'select',
  'select-type',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
] as const;

export type ObjectSubResource = (typeof OBJECT_SUB_RESOURCES)[number];

/** The sub-resources of a bucket in the S3 API reference (and the list flavours of GET). */
export const BUCKET_SUB_RESOURCES = [
  'accelerate',
  'acl',
  'analytics',
  'cors',
  'delete',
  'encryption',
  'intelligent-tiering',
  'inventory',
  'lifecycle',
  'location',
  'logging',
  'metadataTable',
  'metrics',
  'notification',
  'object-lock',
  'ownershipControls',
  'policy',
  'policyStatus',
  'publicAccessBlock',
  'replication',
  'requestPayment',
  'session',
  'tagging',
  'uploads',
  'versioning',
  'versions',
  'website',
] as const;

export type BucketSubResource = (typeof BUCKET_SUB_RESOURCES)[number];

/** The first sub-resource of `names` the request carries, if any. */
export function subResourceOf<T extends string>(request: S3Request, names: readonly T[]): T | undefined {
  return names.find((name) => request.query.has(name));
}

const header = (request: S3Request, name: string): string | undefined => {
  const value = request.req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** S3's canned ACLs: another value is no ACL at all (400), where one of these that is not offered is 501. */
const CANNED_ACLS = new Set([
  'private',
  'public-read',
  'public-read-write',
  'aws-exec-read',
  'authenticated-read',
  'bucket-owner-read',
  'bucket-owner-full-control',
  'log-delivery-write',
]);

/** Canned ACLs that give everyone (anonymous requests included) some access. */
const PUBLIC_ACLS = new Set(['public-read', 'public-read-write', 'aws-exec-read', 'log-delivery-write']);

/**
 * Refuses a request that asks for a guarantee this endpoint does not give, with S3's own error,
 * before anything is read or written: a client that asked for encryption, a retention or a public
 * ACL must never be told 200 for an object stored without it.
 */
export function refuseUnofferedGuarantees(request: S3Request): void {
  // SSE-S3, SSE-C and object lock are given (encryption.ts, object-lock.ts check their headers
  // where they apply); SSE-KMS is not, unless it comes with SSE-C, which is S3's InvalidArgument there.
  const sse = header(request, 'x-amz-server-side-encryption')?.trim();
  if ((sse === 'aws:kms' || sse === 'aws:kms:dsse') && header(request, 'x-amz-server-side-encryption-customer-algorithm') === undefined)
    throw notImplemented('Server-side encryption with AWS KMS keys (SSE-KMS)');
  const acl = header(request, 'x-amz-acl')?.trim();
  if (acl !== undefined && !CANNED_ACLS.has(acl))
    throw new S3Error('InvalidArgument', 400, `${acl} is not a canned ACL`, { ArgumentName: 'x-amz-acl', ArgumentValue: acl });
  // A canned ACL S3 has is taken (or refused: those granting everyone) where a write gives an ACL
  // (acl.ts), once the bucket's policy has judged the request: a policy's Deny comes first, as in S3.
  if (header(request, 'x-amz-website-redirect-location') !== undefined) throw notImplemented('Website redirects');
  const storageClass = header(request, 'x-amz-storage-class');
  if (storageClass !== undefined && storageClass.trim() !== 'STANDARD')
    throw new S3Error('InvalidStorageClass', 400, 'The storage class you specified is not valid', { StorageClassRequested: storageClass });
  // The owner a client expects: refusing when it is someone else is the point of the header.
  const expectedOwner = header(request, 'x-amz-expected-bucket-owner');
  if (expectedOwner !== undefined && expectedOwner !== request.caller.orgId) throw new S3Error('AccessDenied', 403, 'Access Denied');
}

/**
 * BlockPublicAcls: on a bucket that blocks them, a public canned ACL (`authenticated-read`, or one
 * for everyone, which this endpoint does not offer anyway) is AccessDenied, as S3 answers it.
 */
export async function refuseBlockedPublicAcl(
  request: S3Request,
  ownBucket: (orgId: string, name: string) => Promise<Pick<ServedBucket, 'public_access_block'> | null>,
): Promise<void> {
  const acl = header(request, 'x-amz-acl')?.trim();
  if (acl === undefined || !(PUBLIC_ACLS.has(acl) || acl === 'authenticated-read') || request.bucketName === '') return;
  const bucket = await ownBucket(request.caller.orgId, request.bucketName);
  if (bucket?.public_access_block?.blockPublicAcls) throw new S3Error('AccessDenied', 403, 'Access Denied');
}
