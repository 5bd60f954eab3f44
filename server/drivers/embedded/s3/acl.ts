import type { StoredBucket } from '../rows.ts';
import { S3Error, notImplemented } from './errors.ts';
import { checkedSmallBody, headerOf, sendXml, type S3Request } from './request.ts';
import { S3_NAMESPACE, blocks, escapeXml, malformedXml, text } from './xml.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The name the owner of every bucket and object is shown by (its id is the organization's). */
export const OWNER_DISPLAY = 'cloud-platform';

/**
 * ACLs as this endpoint has them: every bucket and object belongs to the organization of the key
 * and nobody else has any access (S3's canned `private`). GetBucketAcl and GetObjectAcl answer
 * that; PutBucketAcl and PutObjectAcl accept it (canned `private`, or a policy granting the owner
 * FULL_CONTROL and no one anything), and refuse any other grant with 501 until bucket policies
 * and public access are designed (docs/s3-compatibility.md).
 */
export function sendOwnerOnlyAcl(request: S3Request, bucket: StoredBucket, headers: Record<string, string> = {}): void {
  const owner = `<ID>${escapeXml(bucket.org_id)}</ID><DisplayName>${OWNER_DISPLAY}</DisplayName>`;
  sendXml(
    request.res,
    200,
    `<?xml version="1.0" encoding="UTF-8"?>\n<AccessControlPolicy xmlns="${S3_NAMESPACE}"><Owner>${owner}</Owner><AccessControlList>` +
      `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">${owner}</Grantee>` +
      `<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>`,
    headers,
  );
}

/** The ObjectOwnership values S3 has: every one means the same here but for ACL requests (BucketOwnerEnforced: none). */
export const OBJECT_OWNERSHIPS = ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'];

/**
 * A bucket whose ownership is BucketOwnerEnforced takes no ACL but `bucket-owner-full-control`
 * (S3: ACLs are disabled there), on writes and on ACL requests alike.
 */
export function assertAclsTaken(request: S3Request, bucket: StoredBucket, aclRequest = false): void {
  if (bucket.ownership !== 'BucketOwnerEnforced') return;
  const canned = headerOf(request, 'x-amz-acl')?.trim();
  if (aclRequest || (canned !== undefined && canned !== 'bucket-owner-full-control'))
    throw new S3Error('AccessControlListNotSupported', 400, 'The bucket does not allow ACLs');
}

/** Reads a PutBucketAcl/PutObjectAcl request: accepted when it asks for what every resource here already has. */
export async function assertOwnerOnlyAcl(request: S3Request): Promise<void> {
  // A canned ACL other than private, and any x-amz-grant-* header, were refused before (sub-resources.ts).
  const canned = headerOf(request, 'x-amz-acl');
  const body = await checkedSmallBody(request);
  if (body.trim() === '') {
    if (canned === undefined) throw new S3Error('MissingSecurityHeader', 400, 'Your request was missing a required header: x-amz-acl');
    return;
  }
  if (canned !== undefined) throw new S3Error('UnexpectedContent', 400, 'This request does not support content when x-amz-acl is given');
  const policy = blocks(body, 'AccessControlPolicy')[0];
  if (policy === undefined)
    throw new S3Error(
      'MalformedACLError',
      400,
      'The XML you provided was not well-formed or did not validate against our published schema',
    );
  const ownerId = text(blocks(policy, 'Owner')[0] ?? '', 'ID');
  if (ownerId !== undefined && ownerId !== request.caller.orgId) throw new S3Error('AccessDenied', 403, 'Access Denied');
  for (const grant of blocks(policy, 'Grant')) {
    const grantee = blocks(grant, 'Grantee')[0];
    if (grantee === undefined) throw malformedXml();
    const id = text(grantee, 'ID');
    const permission = text(grant, 'Permission');
    // Grantees that name nobody are refused as S3 refuses them: there are no e-mail identities
    // here, and an owner's id is an organization's uuid (saying so tells nothing of who exists).
    if (text(grantee, 'EmailAddress') !== undefined)
      throw new S3Error('UnresolvableGrantByEmailAddress', 400, 'The e-mail address you provided does not match any account on record.');
    if (id !== undefined && !UUID.test(id))
      throw new S3Error('InvalidArgument', 400, 'Invalid id', { ArgumentName: 'CanonicalUser/ID', ArgumentValue: id });
    if (id !== request.caller.orgId || permission !== 'FULL_CONTROL') throw notImplemented('Granting access to anyone but the owner');
  }
}
