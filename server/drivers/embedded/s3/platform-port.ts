/**
 * What the S3 endpoint asks the platform, the only way it reaches the platform's records: the
 * storage area implements it (areas/storage/s3-port.ts) over its own tables, and the store keeps
 * its own (keys' secrets, buckets' objects). A key works only while the platform shows it active
 * (a revoke stops it at the request, before the store hears of it); a bucket serves only while
 * the platform shows it active.
 */
export interface S3Platform {
  /** The organization and key of an S3 access key id the platform shows active; undefined otherwise. */
  activeKey(accessKeyId: string): Promise<{ orgId: string; keyId: string } | undefined>;
  /** The id of the organization's bucket of that name, when the platform shows it active. */
  activeBucketId(orgId: string, name: string): Promise<string | undefined>;
  /** The ids of the organization's active buckets. */
  activeBucketIds(orgId: string): Promise<Set<string>>;
}
