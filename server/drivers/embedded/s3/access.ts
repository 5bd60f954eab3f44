import { bucketTag } from '../../../core/bucket-announcements.ts';
import type { CacheSection } from '../../../db/announced-cache.ts';
import type { AclGrant, ServedBucket } from '../rows.ts';
import { aclAllows, aclSharesWith, effectiveGrants } from './acl-grants.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import { S3Error, accessDenied, noSuchBucket } from './errors.ts';
import type { S3Platform } from './platform-port.ts';
import { evaluatePolicy, grantableToOthers, sharesWith, storedPolicy, type PolicyPrincipal } from './policy.ts';

/** The caller of an S3 request, once its key is known and accepted; or no one, for an unsigned request. */
export interface Caller {
  orgId: string;
  keyId: string;
  secret: string;
  /** An unsigned request: it may do only what a bucket's ACL grants everyone, or its policy allows `"*"`. */
  anonymous?: boolean;
}

/**
 * The caller of an unsigned request. Its organization id is the nil uuid, which no organization
 * has: it owns no bucket, and every bucket it reaches is found as another organization's is, by
 * what that bucket shares with everyone.
 */
export const ANONYMOUS: Caller = Object.freeze({ orgId: '00000000-0000-0000-0000-000000000000', keyId: '', secret: '', anonymous: true });

/** What a request does with a bucket, as its policy judges it (policy-actions.ts makes one). */
export interface BucketUse {
  action: string;
  /** The object's key, for an action on an object. */
  key: string | undefined;
  /** The object's version, when the request names one. */
  versionId?: string;
  principal: PolicyPrincipal;
  /** A condition key's value for this request (lower-case name); undefined when absent. */
  value(name: string, bucket: ServedBucket): Promise<string | undefined>;
}

const POLICY_MANAGEMENT = new Set(['s3:GetBucketPolicy', 's3:PutBucketPolicy', 's3:DeleteBucketPolicy']);
const READS = new Set(['s3:GetObject', 's3:GetObjectVersion']);

/**
 * Whether the requester may list the bucket: then a read of a key it does not hold is let through
 * to be answered NoSuchKey, as S3 answers it, since a listing would tell as much (without that
 * right, S3 answers AccessDenied, which tells nothing).
 */
async function maySee(bucket: ServedBucket, use: BucketUse): Promise<boolean> {
  const listing: BucketUse = { ...use, action: 's3:ListBucket', key: undefined, versionId: undefined };
  const verdict = await judged(bucket, listing);
  return (
    verdict === 'allow' || (verdict === 'none' && aclAllows(effectiveGrants(bucket.acl, bucket), use.principal, 's3:ListBucket', 'bucket'))
  );
}

/** What the bucket's policy says of a use: 'deny' (an explicit Deny), 'allow' (an Allow), or 'none'. */
async function judged(bucket: ServedBucket, use: BucketUse): Promise<'allow' | 'deny' | 'none'> {
  if (bucket.policy === null) return 'none';
  const resource = `arn:aws:s3:::${bucket.name}${use.key === undefined ? '' : `/${use.key}`}`;
  const policy = storedPolicy(bucket.policy, bucket.name);
  const verdict = await evaluatePolicy(policy, {
    principal: use.principal,
    action: use.action,
    resource,
    value: (name) => use.value(name, bucket),
  });
  // RestrictPublicBuckets: a public policy gives nothing to other organizations.
  if (verdict === 'allow' && bucket.public_access_block?.restrictPublicBuckets && bucket.org_id !== use.principal.orgId) return 'none';
  return verdict;
}

/** Frozen, with what it holds: a cached bucket is shared by every request that reads it, and none may change it for the others. */
function frozen<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const field of Object.values(value)) frozen(field);
    Object.freeze(value);
  }
  return value;
}

/**
 * Who may do what on the S3 endpoint: the store knows the keys and buckets it holds; the
 * platform (through its port) says whether each is in service. The two are asked at once, on
 * their own connections: every S3 request starts with these, and round trips are what a small
 * object's PUT or GET costs most. An accepted key is then kept in `keys` (a section of the
 * credential cache): the database announces every change of either record of a key, naming it,
 * and each process forgets that key on the announcement, so a revoke still stops the key at once
 * everywhere (the revoke's answer waits for the announcement to come back).
 *
 * An organization's own buckets that are served are kept the same way in `served`, by name: the
 * database announces a change of either record of a bucket (its platform state, its row in the
 * store but for usage), naming it, and every change made through the platform or the store waits
 * until each process has read that announcement before it answers. A name that is not served is
 * never kept: a bucket just created is served from its first request.
 */
export function createAccess(
  platform: S3Platform,
  store: EmbeddedObjectStore,
  keys?: CacheSection<Caller>,
  served?: CacheSection<ServedBucket>,
) {
  /**
   * The caller's own bucket of that name: `bucket` when it is served (its platform record active,
   * its store record not suspended), and the store's record of it either way (null: none).
   */
  const servedBucket = async (orgId: string, name: string): Promise<{ bucket?: ServedBucket; stored: ServedBucket | null }> => {
    const entry = `${orgId}/${name}`;
    const cached = served?.get(entry);
    if (cached) return { bucket: cached, stored: cached };
    const ticket = served?.ticket() ?? 0;
    const [activeId, stored] = await Promise.all([platform.activeBucketId(orgId, name), store.objects.bucketNamed(orgId, name)]);
    if (!stored || stored.suspended || stored.id !== activeId) return { stored };
    // Forgotten when a change of this bucket (either record of it) is announced, and only then.
    served?.put(ticket, entry, frozen(stored), [bucketTag(stored.id)]);
    return { bucket: stored, stored };
  };

  return {
    async caller(accessKeyId: string): Promise<Caller> {
      const cached = keys?.get(accessKeyId);
      if (cached) return cached;
      const ticket = keys?.ticket() ?? 0;
      const [active, stored] = await Promise.all([platform.activeKey(accessKeyId), store.keys.lookup(accessKeyId)]);
      if (!active || !stored || stored.orgId !== active.orgId || stored.keyId !== active.keyId)
        throw new S3Error('InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.');
      const caller = { orgId: stored.orgId, keyId: stored.keyId, secret: stored.secret };
      // Forgotten when a change of this key (either record of it) is announced, and only then.
      keys?.put(ticket, accessKeyId, caller, [`s3_access_key:${stored.keyId}`]);
      return caller;
    },

    /**
     * The bucket of that name a request uses, served. Names are the organization's own (as RGW's
     * tenants keep them): the caller's bucket of that name, if it has one, whose policy may deny
     * the use (AccessDenied). Otherwise another organization's bucket of that name whose policy
     * (object operations and listings only) or ACLs (the bucket's, the object's) allow the use to
     * the caller's organization; a name whose bucket shares nothing with the caller is NoSuchBucket,
     * as any name the caller has not made, so that no organization learns another's names (and
     * AccessDenied for an unsigned request, what AWS answers it for a private bucket).
     */
    async bucket(caller: Caller, name: string, use?: BucketUse): Promise<ServedBucket> {
      if (caller.anonymous && !use) throw accessDenied();
      const own = caller.anonymous ? { stored: null } : await servedBucket(caller.orgId, name);
      if (own.bucket) {
        // The bucket's own organization always manages its policy (as AWS's account root does): no policy locks it out.
        if (use && !POLICY_MANAGEMENT.has(use.action) && (await judged(own.bucket, use)) === 'deny') throw accessDenied();
        return own.bucket;
      }
      if (!use || own.stored !== null) throw noSuchBucket(name);
      // Another organization's bucket of that name that shares itself with the caller's (its policy
      // or its ACLs), or with everyone for an unsigned request.
      const who = use.principal;
      const objectOf = async (candidate: ServedBucket) =>
        use.key === undefined ? undefined : ((await store.objects.version(candidate.id, use.key, use.versionId)) ?? undefined);
      const shared: Array<{ bucket: ServedBucket; objectGrants: AclGrant[] | null; objectMissing: boolean }> = [];
      for (const candidate of await store.objects.bucketsSharedElsewhere(caller.orgId, name, use.key)) {
        const object = await objectOf(candidate);
        const objectGrants = object?.acl ?? null;
        const sharing =
          (candidate.policy !== null && sharesWith(storedPolicy(candidate.policy, name), use.principal)) ||
          aclSharesWith(effectiveGrants(candidate.acl, candidate), who) ||
          aclSharesWith(effectiveGrants(objectGrants, candidate), who);
        if (!sharing || (await platform.activeBucketId(candidate.org_id, name)) !== candidate.id) continue;
        shared.push({ bucket: candidate, objectGrants, objectMissing: use.key !== undefined && (!object || object.delete_marker) });
      }
      // An unsigned request is denied whether or not the name is held, so it learns no names either.
      if (shared.length === 0) throw caller.anonymous ? accessDenied() : noSuchBucket(name);
      const allowed = [];
      for (const { bucket, objectGrants, objectMissing } of shared) {
        const verdict = await judged(bucket, use);
        if (verdict === 'deny') continue;
        if (
          (verdict === 'allow' && grantableToOthers(use.action)) ||
          aclAllows(effectiveGrants(bucket.acl, bucket), who, use.action, 'bucket') ||
          aclAllows(effectiveGrants(objectGrants, bucket), who, use.action, 'object') ||
          (objectMissing && READS.has(use.action) && (await maySee(bucket, use)))
        )
          allowed.push(bucket);
      }
      // Shared with the caller, so its name is no secret; what is not allowed is denied.
      if (allowed.length !== 1) throw accessDenied();
      return allowed[0]!;
    },

    /** Whether the bucket's policy and ACL let this use through (DeleteObjects asks for each key). */
    async allows(bucket: ServedBucket, use: BucketUse): Promise<boolean> {
      const verdict = await judged(bucket, use);
      if (verdict === 'deny') return false;
      return (
        (bucket.org_id === use.principal.orgId && !use.principal.anonymous) ||
        (verdict === 'allow' && grantableToOthers(use.action)) ||
        aclAllows(effectiveGrants(bucket.acl, bucket), use.principal, use.action, 'bucket')
      );
    },

    /**
     * The organization's own bucket of that name, for the settings that shape an answer before or
     * beside its handler (its CORS rules, its public access block): the served bucket, kept as
     * `bucket` keeps it, or else the store's record of a bucket not served (suspended, being
     * deleted), whose error answers still carry those settings. Null when the store has none.
     */
    async ownBucket(orgId: string, name: string): Promise<ServedBucket | null> {
      return (await servedBucket(orgId, name)).stored;
    },

    /** What the platform says of buckets (their lifecycle goes through it). */
    platform,

    /** The caller's buckets that are served (an unsigned request has none). */
    async buckets(caller: Caller): Promise<ServedBucket[]> {
      if (caller.anonymous) return [];
      const [active, stored] = await Promise.all([platform.activeBucketIds(caller.orgId), store.objects.bucketsOf(caller.orgId)]);
      return stored.filter((bucket) => active.has(bucket.id));
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
