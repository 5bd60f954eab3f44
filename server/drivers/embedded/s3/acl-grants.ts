import type { AclGrant, ServedBucket } from '../rows.ts';
import type { PolicyPrincipal } from './policy.ts';

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

/** Who a grant is to, as ACLs name requests: an organization, or an unsigned request (no one's). */
export type Grantee = Pick<PolicyPrincipal, 'orgId' | 'anonymous'>;

/** Whether a grant names the requester: everyone does; every organization's keys and an organization's own name signed requests only. */
const names = (grant: AclGrant, who: Grantee) =>
  grant.grantee === 'group:all' || (!who.anonymous && (grant.grantee === 'group:authenticated' || grant.grantee === `org:${who.orgId}`));

/** Grants S3 counts as public: to every organization's keys, or to everyone. */
export const isPublicGrant = (grant: AclGrant): boolean => grant.grantee === 'group:authenticated' || grant.grantee === 'group:all';

/** Whether ACL grants let another organization, or an unsigned request, do an action (on a bucket, or on an object). */
export function aclAllows(grants: AclGrant[] | null | undefined, who: Grantee, action: string, level: 'bucket' | 'object'): boolean {
  const table = level === 'bucket' ? BUCKET_PERMISSIONS : OBJECT_PERMISSIONS;
  return (grants ?? []).some((grant) => names(grant, who) && table[grant.permission].includes(action.toLowerCase()));
}

/**
 * The grants a bucket's public access block lets count: IgnorePublicAcls ignores those to every
 * organization's keys and to everyone (S3 counts both as public).
 */
export const effectiveGrants = (grants: AclGrant[] | null | undefined, bucket: ServedBucket): AclGrant[] =>
  (grants ?? []).filter((grant) => !(bucket.public_access_block?.ignorePublicAcls && isPublicGrant(grant)));

/** Whether ACL grants name a requester at all (then the bucket's name is no secret to it). */
export const aclSharesWith = (grants: AclGrant[] | null | undefined, who: Grantee): boolean =>
  (grants ?? []).some((grant) => names(grant, who));
