/**
 * What the S3 endpoint asks the platform, the only way it reaches the platform's records: the
 * storage area implements it (areas/storage/s3-port.ts) over its own tables, and the store keeps
 * its own (keys' secrets, buckets' objects). A key works only while the platform shows it active
 * (a revoke stops it at the request, before the store hears of it); a bucket serves only while
 * the platform shows it active.
 *
 * Buckets are created, deleted and given versioning through the platform's own bucket lifecycle,
 * whichever door the request came through: the same name rules, slots, spend budget, soft
 * delete, audit events and operations as the API's. A change the rules refuse throws the API's
 * DomainError (core/errors.ts), whose `code` the endpoint answers with S3's own error.
 */
export interface S3Platform {
  /** The organization and key of an S3 access key id the platform shows active; undefined otherwise. */
  activeKey(accessKeyId: string): Promise<{ orgId: string; keyId: string } | undefined>;
  /** The id of the organization's bucket of that name, when the platform shows it active. */
  activeBucketId(orgId: string, name: string): Promise<string | undefined>;
  /** The ids of the organization's active buckets. */
  activeBucketIds(orgId: string): Promise<Set<string>>;
  /** The organization's bucket of that name as the platform holds it (any state but purged); undefined when none. */
  bucketNamed(orgId: string, name: string): Promise<PlatformBucket | undefined>;
  /** Accepts a new bucket (as the API's createBucket does): the bucket and its `bucket.create` operation. */
  createBucket(actor: S3Actor, request: { name: string; versioning: boolean }): Promise<PlatformBucketChange>;
  /** Soft-deletes an empty bucket (as the API's deleteBucket does): its `bucket.delete` operation. */
  deleteBucket(actor: S3Actor, name: string): Promise<PlatformBucketChange>;
  /** Turns versioning on or off (S3's Enabled and Suspended), in the store too by the time it answers. */
  setBucketVersioning(actor: S3Actor, name: string, enabled: boolean): Promise<PlatformBucketChange>;
  /** Waits, at most `timeoutMs`, for an operation to finish: its final state, or `pending` when it has not finished yet. */
  settled(orgId: string, operationId: string, timeoutMs: number): Promise<'succeeded' | 'failed' | 'cancelled' | 'pending'>;
  /**
   * The statement that records the audit event of a change of a bucket's configuration made over
   * S3 (its ACL, policy, public access block, CORS…). The store runs it in the change's own
   * transaction, so that no such change goes unrecorded: one that makes data public above all.
   */
  settingAudit(change: S3SettingChange): AuditStatement;
}

/** A change of a bucket's configuration over S3, as its audit event records it. */
export interface S3SettingChange {
  actor: S3Actor;
  /** The bucket's organization, whose audit trail it is (the actor's key may be another's, by a grant). */
  orgId: string;
  bucketId: string;
  /** `bucket.set_policy`, `bucket.delete_cors`, `bucket.set_object_acl`… */
  action: string;
  /** The setting before and after, by its name (`{"policy": …}`); null when there was none. */
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/** A statement to run in a transaction of the store's (a query with its values). */
export interface AuditStatement {
  name?: string;
  text: string;
  values?: unknown[];
}

/** Who makes a change over S3, for its audit event: the access key that signed the request. */
export interface S3Actor {
  orgId: string;
  /** The platform's id of the S3 access key. */
  keyId: string;
  /** Its public half, as the request named it. */
  accessKeyId: string;
  /** The S3 request's id (x-amz-request-id). */
  requestId: string;
}

export interface PlatformBucket {
  id: string;
  name: string;
  state: 'creating' | 'active' | 'deleting' | 'soft_deleted' | 'error';
  versioning: boolean;
  /** The operation of its latest change. */
  operationId: string | null;
  /** When a soft-deleted bucket is purged (and its name freed). */
  purgeAfter: Date | null;
}

export interface PlatformBucketChange {
  bucket: PlatformBucket;
  /** The operation carrying the change out; null when the change was carried out before the answer. */
  operationId: string | null;
}
