// Rows of the embedded store's tables (migrations/0900_embedded_object_store.sql, 0980_…), as read.
import type { BlobSealing } from './sealing.ts';

export interface Segment {
  blob: string;
  size: number;
  /** The part's ETag, for a segment that was a part of a multipart upload (GetObject by partNumber). */
  etag?: string;
  /** The part's verified checksums, for such a segment (GetObjectAttributes). */
  checksums?: Record<string, string>;
  /** Set when the blob is sealed at rest (sealing.ts): its wrapped data key. */
  sealing?: BlobSealing;
}

/** How a version's bytes are sealed at rest: SSE-S3, or SSE-C with the MD5 of the customer's key. */
export interface VersionEncryption {
  algorithm: 'AES256';
  customerKeyMd5?: string;
}

/** An object lock retention (S3's modes). */
export interface Retention {
  mode: 'GOVERNANCE' | 'COMPLIANCE';
  until: Date;
}

/** An S3 tag: its key and value. */
export type Tag = [key: string, value: string];

export interface StoredBucket {
  id: string;
  org_id: string;
  name: string;
  versioning: boolean;
  /** Versioning was configured at some time: off now means S3's Suspended rather than never enabled. */
  versioning_configured: boolean;
  /** The bucket's TagSet, in key order; null when it has none. */
  tags: Tag[] | null;
  /** S3's ObjectOwnership setting; null when none was set. */
  ownership: string | null;
  max_objects: number | null;
  max_size_bytes: number | null;
  suspended: boolean;
  usage_bytes: number;
  usage_objects: number;
  created_at: Date;
  default_encryption: 'AES256' | null;
  cors: unknown;
  lifecycle: unknown;
  object_lock_enabled: boolean;
  object_lock_default: { mode: Retention['mode']; days?: number; years?: number } | null;
  /** The bucket policy as given (PutBucketPolicy); null when it has none. */
  policy: string | null;
  public_access_block: PublicAccessBlock | null;
  /** The ACL as given (the owner's own grants included); null: the owner's FULL_CONTROL alone, as every resource starts. */
  acl: AclGrant[] | null;
  /** The LocationConstraint the bucket was created naming; null when none was named. */
  location: string | null;
}

/**
 * A bucket as the S3 endpoint serves its requests: its settings, which every change announces (a
 * request may have them from the endpoint's cache: s3/access.ts). Not its running usage, which
 * moves with every write, nor its quota, checked against that usage under the row's lock.
 */
export type ServedBucket = Omit<StoredBucket, 'usage_bytes' | 'usage_objects' | 'max_objects' | 'max_size_bytes'>;

/**
 * An ACL grant: to an organization (`org:<id>`, the owner's included), to every organization's keys
 * (`group:authenticated`), or to everyone, unsigned requests included (`group:all`).
 */
export interface AclGrant {
  grantee: string;
  permission: 'READ' | 'WRITE' | 'READ_ACP' | 'WRITE_ACP' | 'FULL_CONTROL';
}

/** S3's PublicAccessBlockConfiguration of a bucket. */
export interface PublicAccessBlock {
  blockPublicAcls: boolean;
  ignorePublicAcls: boolean;
  blockPublicPolicy: boolean;
  restrictPublicBuckets: boolean;
}

export interface StoredVersion {
  bucket_id: string;
  key: string;
  version_id: string;
  seq: number;
  delete_marker: boolean;
  size_bytes: number;
  etag: string | null;
  content_type: string | null;
  headers: Record<string, string>;
  checksums: Record<string, string>;
  segments: Segment[];
  /** The object's tags, in key order. */
  tags: Tag[];
  last_modified: Date;
  /** Set by the queries that say whether this is the key's latest version. */
  is_latest?: boolean;
  encryption: VersionEncryption | null;
  lock_mode: Retention['mode'] | null;
  lock_until: Date | null;
  legal_hold: boolean;
  /** The ACL as given (the owner's own grants included); null: the owner's FULL_CONTROL alone, as every resource starts. */
  acl?: AclGrant[] | null;
}

export interface StoredUpload {
  upload_id: string;
  bucket_id: string;
  key: string;
  content_type: string | null;
  headers: Record<string, string>;
  checksum_algorithm: string | null;
  /** The tags of the object it completes into. */
  tags: Tag[];
  initiated: Date;
  encryption: VersionEncryption | null;
  lock: { mode: Retention['mode'] | null; until: string | null; legalHold: boolean } | null;
  acl: AclGrant[] | null;
}

export interface StoredPart {
  upload_id: string;
  part_number: number;
  blob: string;
  size_bytes: number;
  etag: string;
  checksums: Record<string, string>;
  last_modified: Date;
  sealing: BlobSealing | null;
}

/** bigint columns arrive as number (or bigint beyond 2^53): object sizes fit in a number. */
export const num = (value: unknown): number => Number(value);

export function bucketOf(row: StoredBucket): StoredBucket {
  return {
    ...row,
    max_objects: row.max_objects === null ? null : num(row.max_objects),
    max_size_bytes: row.max_size_bytes === null ? null : num(row.max_size_bytes),
    usage_bytes: num(row.usage_bytes),
    usage_objects: num(row.usage_objects),
  };
}

export function versionOf(row: StoredVersion): StoredVersion {
  return {
    ...row,
    seq: num(row.seq),
    size_bytes: num(row.size_bytes),
    segments: row.segments.map((segment) => ({
      blob: segment.blob,
      size: num(segment.size),
      ...(segment.sealing ? { sealing: segment.sealing } : {}),
      ...(segment.etag ? { etag: segment.etag } : {}),
      ...(segment.checksums ? { checksums: segment.checksums } : {}),
    })),
    // Read as JSON (a write's snapshot), timestamps are text.
    lock_until: row.lock_until === null || row.lock_until === undefined ? null : new Date(row.lock_until),
    legal_hold: row.legal_hold ?? false,
    encryption: row.encryption ?? null,
    lock_mode: row.lock_mode ?? null,
  };
}
