import { createHash, createHmac } from 'node:crypto';

/**
 * How the platform's organizations, access keys and secrets are named in the RADOS Gateway.
 *
 * Each organization is an RGW tenant, so that bucket names are unique per organization (as the
 * platform promises) rather than across the whole gateway; an S3 client of the organization
 * names its buckets plainly, RGW resolves them in its own tenant. In the tenant live three users:
 * - `org`: owns the organization's served buckets and holds its customers' access keys; it
 *   may not create buckets (max-buckets -1), nor delete them (each bucket's policy denies it,
 *   `bucketGuardPolicy`), so every bucket is made and deleted through the platform;
 * - `platform`: creates buckets (then hands them to `org` with a bucket link) and holds
 *   soft-deleted ones, which `org`'s keys then cannot reach;
 * - `vault`: suspended (its keys open nothing); the secret store: an access key's secret waits
 *   here, as the secret of a key of this user, from its creation until it is revoked.
 */
export const tenantOf = (orgId: string): string => orgId.replaceAll('-', '').toLowerCase();

export const orgUserOf = (orgId: string): string => `${tenantOf(orgId)}$org`;
export const platformUserOf = (orgId: string): string => `${tenantOf(orgId)}$platform`;
export const vaultUserOf = (orgId: string): string => `${tenantOf(orgId)}$vault`;

const digest = (text: string): string => createHash('sha256').update(text).digest('hex').toUpperCase();

/**
 * The public half of a customer's key: fixed by the platform's key id, so that a repeated
 * registration finds the key it made. Twenty characters, as AWS access keys are.
 */
export const customerAccessKeyOf = (keyId: string): string => `CP${digest(`customer:${keyId}`).slice(0, 18)}`;
/** The vault's key holding a customer key's secret until it is registered and while it lives. */
export const vaultAccessKeyOf = (keyId: string): string => `CV${digest(`vault:${keyId}`).slice(0, 18)}`;

/**
 * The driver's own keys (on `org`, to list versions and read versioning; on `platform`, to create
 * buckets): derived from the admin secret, so that every process finds the same ones and nothing
 * needs storing. A new admin secret gives new keys, which the driver installs on first use.
 */
export function managementKeyOf(
  adminSecret: string,
  user: 'org' | 'platform',
  orgId: string,
): { accessKeyId: string; secretAccessKey: string } {
  return {
    accessKeyId: `${user === 'org' ? 'CM' : 'CQ'}${digest(`${user}:${orgId}`).slice(0, 18)}`,
    secretAccessKey: createHmac('sha256', adminSecret).update(`${user}:${orgId}`).digest('base64').slice(0, 40),
  };
}

/** The organization and key of a secret-store path (`orgs/{org}/s3-access-keys/{key}`), or null. */
export function keyOfSecretPath(path: string): { orgId: string; keyId: string } | null {
  const match = /^orgs\/([0-9a-f-]{36})\/s3-access-keys\/([0-9a-f-]{36})$/i.exec(path);
  return match ? { orgId: match[1]!, keyId: match[2]! } : null;
}

/** The statement id of the platform's guard in a bucket's policy (names the guard, to find it again). */
export const GUARD_STATEMENT_ID = 'cloud-platform-bucket-lifecycle';

/**
 * The policy the platform gives every bucket: the organization's keys (the tenant's `org` user,
 * the bucket's owner) may not delete the bucket nor change or remove this policy. A bucket is
 * deleted through the platform (a soft delete, by a bucket link that RGW's policies do not
 * govern), as the API promises; an owner's DeleteBucket would remove it behind the platform's
 * back. RGW applies a policy's Deny to the bucket's owner too (Pacific's verify_bucket_permission).
 */
export function bucketGuardPolicy(orgId: string, name: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Sid: GUARD_STATEMENT_ID,
        Effect: 'Deny',
        Principal: { AWS: [`arn:aws:iam::${tenantOf(orgId)}:user/org`] },
        Action: ['s3:DeleteBucket', 's3:PutBucketPolicy', 's3:DeleteBucketPolicy'],
        Resource: [`arn:aws:s3::${tenantOf(orgId)}:${name}`],
      },
    ],
  });
}
