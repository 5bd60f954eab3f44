import type { AclGrant, StoredBucket } from '../rows.ts';

// What ACL grants let other organizations do (acl.ts reads and shows ACLs; access.ts applies them).

/** What each permission of a bucket's ACL lets its grantee do (S3's mapping). */
const BUCKET_PERMISSIONS: Record<AclGrant['permission'], string[]> = {
  READ: ['s3:listbucket', 's3:listbucketversions', 's3:listbucketmultipartuploads'],
  WRITE: ['s3:putobject', 's3:deleteobject', 's3:deleteobjectversion', 's3:abortmultipartupload', 's3:listmultipartuploadparts'],
  READ_ACP: ['s3:getbucketacl'],
  WRITE_ACP: ['s3:putbucketacl'],
  FULL_CONTROL: [],
};
/** What each permission of an object's ACL lets its grantee do. */
const OBJECT_PERMISSIONS: Record<AclGrant['permission'], string[]> = {
  READ: ['s3:getobject', 's3:getobjectversion'],
  WRITE: [],
  READ_ACP: ['s3:getobjectacl', 's3:getobjectversionacl'],
  WRITE_ACP: ['s3:putobjectacl', 's3:putobjectversionacl'],
  FULL_CONTROL: [],
};
for (const table of [BUCKET_PERMISSIONS, OBJECT_PERMISSIONS])
  table.FULL_CONTROL = [...table.READ, ...table.WRITE, ...table.READ_ACP, ...table.WRITE_ACP];

const names = (grant: AclGrant, orgId: string) => grant.grantee === 'group:authenticated' || grant.grantee === `org:${orgId}`;

/** Whether ACL grants let another organization do an action (on a bucket, or on an object). */
export function aclAllows(grants: AclGrant[] | null | undefined, orgId: string, action: string, level: 'bucket' | 'object'): boolean {
  const table = level === 'bucket' ? BUCKET_PERMISSIONS : OBJECT_PERMISSIONS;
  return (grants ?? []).some((grant) => names(grant, orgId) && table[grant.permission].includes(action.toLowerCase()));
}

/**
 * The grants a bucket's public access block lets count: IgnorePublicAcls ignores those to every
 * organization's keys (S3 counts AuthenticatedUsers as public).
 */
export const effectiveGrants = (grants: AclGrant[] | null | undefined, bucket: StoredBucket): AclGrant[] =>
  (grants ?? []).filter((grant) => !(bucket.public_access_block?.ignorePublicAcls && grant.grantee === 'group:authenticated'));

/** Whether ACL grants name an organization at all (then the bucket's name is no secret to it). */
export const aclSharesWith = (grants: AclGrant[] | null | undefined, orgId: string): boolean =>
  (grants ?? []).some((grant) => names(grant, orgId));
