import type { AclGrant, ServedBucket } from '../rows.ts';
import { isPublicGrant } from './acl-grants.ts';
import { S3Error, notImplemented } from './errors.ts';
import { checkedSmallBody, headerOf, sendXml, type S3Request } from './request.ts';
import { S3_NAMESPACE, blocks, escapeXml, malformedXml, text } from './xml.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The name the owner of every bucket and object is shown by (its id is the organization's). */
export const OWNER_DISPLAY = 'cloud-platform';

const AUTHENTICATED_USERS = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';
const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
const PERMISSIONS = new Set<AclGrant['permission']>(['READ', 'WRITE', 'READ_ACP', 'WRITE_ACP', 'FULL_CONTROL']);
const XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"';

/**
 * ACLs as this endpoint has them: every bucket and object belongs to its bucket's organization,
 * which keeps full control whatever its ACL says (an ACL is kept and shown as given); grants give
 * other organizations (a CanonicalUser whose ID is an organization id), every organization's keys
 * (the AuthenticatedUsers group) or everyone, unsigned requests included (the AllUsers group,
 * `public-read`, `public-read-write`), what S3's permissions give (aclAllows). Grants to groups
 * this endpoint has no members for (`aws-exec-read`'s EC2, `log-delivery-write`'s LogDelivery)
 * are refused with 501 rather than stored and not honoured.
 */
export function sendAcl(
  request: S3Request,
  bucket: ServedBucket,
  grants: AclGrant[] | null | undefined,
  headers: Record<string, string> = {},
): void {
  const ownerId = bucket.org_id;
  const owner = `<ID>${escapeXml(ownerId)}</ID><DisplayName>${OWNER_DISPLAY}</DisplayName>`;
  const grantee = (grant: AclGrant) =>
    grant.grantee === 'group:authenticated' || grant.grantee === 'group:all'
      ? `<Grantee ${XSI} xsi:type="Group"><URI>${grant.grantee === 'group:all' ? ALL_USERS : AUTHENTICATED_USERS}</URI></Grantee>`
      : `<Grantee ${XSI} xsi:type="CanonicalUser"><ID>${escapeXml(grant.grantee.slice(4))}</ID><DisplayName>${OWNER_DISPLAY}</DisplayName></Grantee>`;
  // As given, the owner's own grants last (RGW lists other grantees first); none given: the owner's FULL_CONTROL.
  const given = grants ?? ownerOnly(ownerId);
  const ordered = [
    ...given.filter((grant) => grant.grantee !== `org:${ownerId}`),
    ...given.filter((grant) => grant.grantee === `org:${ownerId}`),
  ];
  const list = ordered.map((grant) => `<Grant>${grantee(grant)}<Permission>${grant.permission}</Permission></Grant>`).join('');
  sendXml(
    request.res,
    200,
    `<?xml version="1.0" encoding="UTF-8"?>\n<AccessControlPolicy xmlns="${S3_NAMESPACE}"><Owner>${owner}</Owner><AccessControlList>` +
      `${list}</AccessControlList></AccessControlPolicy>`,
    headers,
  );
}

/** The ACL every bucket and object has until one is given: its owner's FULL_CONTROL. */
const ownerOnly = (ownerId: string): AclGrant[] => [{ grantee: `org:${ownerId}`, permission: 'FULL_CONTROL' }];

/** The grants of each canned ACL besides the owner's FULL_CONTROL; 'unoffered' for those granting a group no one here belongs to. */
const CANNED: Record<string, AclGrant[] | 'unoffered'> = {
  private: [],
  'bucket-owner-read': [],
  'bucket-owner-full-control': [],
  'authenticated-read': [{ grantee: 'group:authenticated', permission: 'READ' }],
  'public-read': [{ grantee: 'group:all', permission: 'READ' }],
  'public-read-write': [
    { grantee: 'group:all', permission: 'READ' },
    { grantee: 'group:all', permission: 'WRITE' },
  ],
  'aws-exec-read': 'unoffered',
  'log-delivery-write': 'unoffered',
};

const unofferedGroup = (canned: string) => notImplemented(`The canned ACL ${canned} (a grant to a group of AWS services)`);

/** One grantee of an ACL, checked: an organization (the owner's included), or every organization's keys. */
function granteeOf(kind: 'id' | 'uri' | 'emailAddress', value: string): string {
  if (kind === 'emailAddress')
    throw new S3Error('UnresolvableGrantByEmailAddress', 400, 'The e-mail address you provided does not match any account on record.');
  if (kind === 'uri') {
    if (value === AUTHENTICATED_USERS) return 'group:authenticated';
    if (value === ALL_USERS) return 'group:all';
    throw new S3Error('InvalidArgument', 400, 'Invalid group uri', { ArgumentName: 'Group/URI', ArgumentValue: value });
  }
  // An owner's id is an organization's uuid (saying so tells nothing of who exists).
  if (!UUID.test(value))
    throw new S3Error('InvalidArgument', 400, 'Invalid id', { ArgumentName: 'CanonicalUser/ID', ArgumentValue: value });
  return `org:${value.toLowerCase()}`;
}

const GRANT_HEADERS: Array<[string, AclGrant['permission']]> = [
  ['x-amz-grant-read', 'READ'],
  ['x-amz-grant-write', 'WRITE'],
  ['x-amz-grant-read-acp', 'READ_ACP'],
  ['x-amz-grant-write-acp', 'WRITE_ACP'],
  ['x-amz-grant-full-control', 'FULL_CONTROL'],
];

/** The grants of a canned ACL (`x-amz-acl`, a form's `acl` field), checked. */
export function cannedAcl(canned: string, ownerId: string): AclGrant[] {
  const grants = CANNED[canned];
  if (grants === undefined)
    throw new S3Error('InvalidArgument', 400, `${canned} is not a canned ACL`, { ArgumentName: 'x-amz-acl', ArgumentValue: canned });
  if (grants === 'unoffered') throw unofferedGroup(canned);
  return [...grants, ...ownerOnly(ownerId)];
}

/**
 * The ACL a write asks for with its headers (a canned `x-amz-acl`, or `x-amz-grant-*`, which are
 * then the whole ACL, as S3 takes them), checked; undefined when it asks for none. `ownerId`: the
 * bucket's organization.
 */
export function aclOfHeaders(request: S3Request, ownerId: string): AclGrant[] | undefined {
  const canned = headerOf(request, 'x-amz-acl')?.trim();
  const granted = GRANT_HEADERS.filter(([name]) => headerOf(request, name) !== undefined);
  if (canned !== undefined && granted.length > 0)
    throw new S3Error('InvalidRequest', 400, 'Specifying both Canned ACLs and Header Grants is not allowed');
  if (canned !== undefined) return cannedAcl(canned, ownerId);
  if (granted.length === 0) return undefined;
  const grants: AclGrant[] = [];
  for (const [name, permission] of granted) {
    for (const entry of headerOf(request, name)!.split(',')) {
      const match = /^\s*(id|uri|emailAddress)\s*=\s*"?([^"]*)"?\s*$/i.exec(entry);
      if (!match) throw new S3Error('InvalidArgument', 400, `Invalid ${name} value`, { ArgumentName: name, ArgumentValue: entry.trim() });
      const kind = (match[1]!.toLowerCase() === 'emailaddress' ? 'emailAddress' : match[1]!.toLowerCase()) as 'id' | 'uri' | 'emailAddress';
      grants.push({ grantee: granteeOf(kind, match[2]!), permission });
    }
  }
  return grants;
}

/**
 * Reads a PutBucketAcl/PutObjectAcl request: a canned ACL or grant headers with no body, or an
 * AccessControlPolicy document. Its grants, kept as given (the owner's own included).
 */
export async function aclOfRequest(request: S3Request, ownerId: string): Promise<AclGrant[]> {
  const fromHeaders = aclOfHeaders(request, ownerId);
  const body = await checkedSmallBody(request);
  if (body.trim() === '') {
    if (fromHeaders === undefined) throw new S3Error('MissingSecurityHeader', 400, 'Your request was missing a required header: x-amz-acl');
    return fromHeaders;
  }
  if (fromHeaders !== undefined)
    throw new S3Error('UnexpectedContent', 400, 'This request does not support content when x-amz-acl is given');
  const policy = blocks(body, 'AccessControlPolicy')[0];
  if (policy === undefined)
    throw new S3Error(
      'MalformedACLError',
      400,
      'The XML you provided was not well-formed or did not validate against our published schema',
    );
  const ownerIdGiven = text(blocks(policy, 'Owner')[0] ?? '', 'ID');
  if (ownerIdGiven !== undefined && ownerIdGiven !== ownerId) throw new S3Error('AccessDenied', 403, 'Access Denied');
  const grants: AclGrant[] = [];
  for (const grant of blocks(policy, 'Grant')) {
    const granteeBlock = blocks(grant, 'Grantee')[0];
    if (granteeBlock === undefined) throw malformedXml();
    const permission = text(grant, 'Permission') as AclGrant['permission'] | undefined;
    if (permission === undefined || !PERMISSIONS.has(permission)) throw malformedXml();
    const id = text(granteeBlock, 'ID');
    const uri = text(granteeBlock, 'URI');
    const email = text(granteeBlock, 'EmailAddress');
    const grantee =
      email !== undefined
        ? granteeOf('emailAddress', email)
        : uri !== undefined
          ? granteeOf('uri', uri)
          : id !== undefined
            ? granteeOf('id', id)
            : (() => {
                throw malformedXml();
              })();
    if (!grants.some((kept) => kept.grantee === grantee && kept.permission === permission)) grants.push({ grantee, permission });
  }
  return grants;
}

/** BlockPublicAcls: a new ACL that grants everyone or every organization's keys anything is AccessDenied, as S3 answers it. */
export function assertNotBlocked(grants: AclGrant[] | undefined, bucket: ServedBucket): void {
  if (bucket.public_access_block?.blockPublicAcls && grants?.some(isPublicGrant)) throw new S3Error('AccessDenied', 403, 'Access Denied');
}

/** The ObjectOwnership values S3 has: every one means the same here but for ACL requests (BucketOwnerEnforced: none). */
export const OBJECT_OWNERSHIPS = ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'];

/**
 * A bucket whose ownership is BucketOwnerEnforced takes no ACL but `bucket-owner-full-control`
 * (S3: ACLs are disabled there), on writes and on ACL requests alike.
 */
export function assertAclsTaken(request: S3Request, bucket: ServedBucket, aclRequest = false): void {
  if (aclRequest && bucket.ownership === 'BucketOwnerEnforced') throw aclsNotSupported();
  assertCannedAclTaken(headerOf(request, 'x-amz-acl')?.trim(), bucket);
}

/** The same for a write's canned ACL alone (`x-amz-acl`, a form's `acl` field); undefined when it gives none. */
export function assertCannedAclTaken(canned: string | undefined, bucket: ServedBucket): void {
  if (bucket.ownership === 'BucketOwnerEnforced' && canned !== undefined && canned !== 'bucket-owner-full-control')
    throw aclsNotSupported();
}

const aclsNotSupported = () => new S3Error('AccessControlListNotSupported', 400, 'The bucket does not allow ACLs');
