/**
 * The object store driver: an S3-compatible object store administered through its admin API
 * (buckets, per-bucket and per-organization quotas, access keys, usage), plus the platform's
 * secret store in which the secrets of S3 access keys are kept.
 *
 * Every method is safe to repeat: a bucket is addressed by the platform's bucket id (a repeated
 * create after a crashed attempt finds the bucket it made), an access key by the platform's key
 * id. Failures are TransientBackendError or PermanentBackendError (drivers/errors.ts); the
 * backend's own words never leave the driver.
 */
export interface ObjectStoreDriver {
  /** Creates the bucket, or reports the one this bucket id already made. */
  createBucket(request: BucketSpec): Promise<BucketReport>;
  /**
   * Soft-deletes the bucket: the store keeps it, its name and settings, but serves nothing from
   * it until it is restored or purged. Refused (permanently) while it holds any object version
   * or delete marker.
   */
  suspendBucket(request: BucketAddress): Promise<BucketReport>;
  /** Serves a soft-deleted bucket again, with the settings it had. */
  resumeBucket(request: BucketAddress): Promise<BucketReport>;
  /** Removes the bucket for good. Nothing to do when it is already gone. */
  purgeBucket(request: BucketAddress): Promise<void>;
  /** Sets the per-bucket caps (null: no cap on that measure). */
  setBucketQuota(request: BucketAddress & { quota: BucketCaps }): Promise<BucketReport>;
  /**
   * Turns versioning on, or off (S3's Suspended: the versions kept stay, new writes replace the
   * key's `null` version).
   */
  setBucketVersioning(request: BucketAddress & { versioning: boolean }): Promise<BucketReport>;
  /** The bucket as the store sees it now; null when the store does not hold it. */
  describeBucket(request: BucketAddress): Promise<BucketReport | null>;
  /** Everything the store holds for an organization: its buckets, usage and enforced ceiling. */
  describeOrganization(orgId: string): Promise<OrganizationReport>;
  /** Sets the organization-wide limits the store enforces on new writes. */
  setOrganizationQuota(request: { orgId: string } & EnforcedQuota): Promise<EnforcedQuota>;
  /** Registers an access key with its secret; reports the public half the store assigned. */
  createAccessKey(request: { orgId: string; keyId: string; secret: string }): Promise<{ accessKeyId: string }>;
  /** Stops accepting the key. Nothing to do when it is already revoked or unknown. */
  revokeAccessKey(request: { orgId: string; keyId: string }): Promise<void>;
  /** The platform's secret store (a vault): S3 secrets live here and nowhere else. */
  secrets: SecretStore;
}

export interface SecretStore {
  /** Writes the secret at `path` (overwrites: safe to repeat). */
  put(path: string, secret: string): Promise<void>;
  /** The secret at `path`, or null when none is stored. */
  get(path: string): Promise<string | null>;
  /** Destroys the secret at `path`. Nothing to do when none is stored. */
  destroy(path: string): Promise<void>;
}

export interface BucketAddress {
  orgId: string;
  bucketId: string;
  /** The bucket's name: the store's name for it, and the subject of injected faults. */
  name: string;
}

export interface BucketCaps {
  maxObjects: number | null;
  maxSizeBytes: number | null;
}

export interface BucketSpec extends BucketAddress {
  versioning: boolean;
  quota: BucketCaps;
}

/** What the store reports about one bucket. */
export interface BucketReport {
  bucketId: string;
  name: string;
  versioning: boolean;
  quota: BucketCaps;
  /** True while soft-deleted (kept, not served). */
  suspended: boolean;
  /** Stored bytes and objects, every object version and delete marker included. */
  usage: StorageUsage;
}

export interface StorageUsage {
  bytes: number;
  objects: number;
}

/** The organization-wide limits on new writes (reads and deletes always work). */
export interface EnforcedQuota {
  hardBytes: number;
  maxObjects: number;
  /** No new writes at all: the organization's object storage or billing is suspended. */
  writesSuspended: boolean;
}

export interface OrganizationReport {
  buckets: BucketReport[];
  /** Across all of the organization's buckets, soft-deleted ones included. */
  usage: StorageUsage;
  /** The limits the store enforces; null when none were ever set. */
  enforced: EnforcedQuota | null;
  /**
   * Bytes served to clients (GetObject bodies) for the organization since it exists: monotonic,
   * never reset (billing meters egress from the growth of this figure).
   */
  egressBytes: number;
}
