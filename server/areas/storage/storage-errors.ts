import { conflict, invalid, notFound } from '../../core/errors.ts';

// The object-storage area's named errors: the only place their status, code and title are chosen.

export const bucketNotFound = (bucketId: string) => notFound(`No bucket ${bucketId} in this organization.`);

export const accessKeyNotFound = (keyId: string) => notFound(`No S3 access key ${keyId} in this organization.`);

export const bucketNameTaken = (name: string, purgeAfter: string | null) =>
  conflict(
    'bucket_name_taken',
    'Bucket name taken',
    purgeAfter === null
      ? `A bucket named ${name} already exists in this organization.`
      : `The soft-deleted bucket ${name} keeps its name until it is purged after ${purgeAfter}; restore it or choose another name.`,
  );

export const bucketLimitReached = (maxBuckets: number, restoring: boolean) =>
  conflict(
    'bucket_limit_reached',
    'Bucket limit reached',
    restoring
      ? `All ${maxBuckets} bucket slots (max_buckets) are in use; a restored bucket needs a free slot. Delete a bucket or ask for a higher limit.`
      : `All ${maxBuckets} bucket slots (max_buckets) are in use. Soft-deleted buckets hold no slot; delete a bucket or ask for a higher limit.`,
  );

export const bucketNotEmpty = (name: string) =>
  conflict(
    'bucket_not_empty',
    'Bucket not empty',
    `Bucket ${name} still holds objects, previous versions or delete markers; delete every object version and delete marker first.`,
  );

/** `needed` says which state the change needs, as a sentence ending. */
export const bucketStateConflict = (name: string, state: string, needed: string) =>
  conflict('bucket_state_conflict', 'Bucket state conflict', `Bucket ${name} is ${state}; ${needed}.`);

export const bucketQuotaExceedsCeiling = (maxSizeBytes: number, hardBytes: number) =>
  invalid(
    'bucket_quota_exceeds_ceiling',
    'Bucket quota exceeds the organization ceiling',
    `max_size_bytes ${maxSizeBytes} is above the organization's ceiling of ${hardBytes} bytes (hard_bytes).`,
    [{ pointer: '/max_size_bytes', detail: `must not exceed the organization ceiling of ${hardBytes} bytes` }],
  );

export const accessKeyStateConflict = (keyId: string, state: string) =>
  conflict(
    'access_key_state_conflict',
    'Access key state conflict',
    `S3 access key ${keyId} is ${state}; only an active key, or one in error, can be revoked.`,
  );
