import type { CacheSection } from '../../../db/announced-cache.ts';
import type { AclGrant, StoredBucket } from '../rows.ts';
import { aclAllows, aclSharesWith, effectiveGrants } from './acl-grants.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import { S3Error, accessDenied, noSuchBucket } from './errors.ts';
import type { S3Platform } from './platform-port.ts';
import { evaluatePolicy, grantableToOthers, sharesWith, storedPolicy, type PolicyPrincipal } from './policy.ts';

/** The caller of an S3 request, once its key is known and accepted. */
export interface Caller {
  orgId: string;
  keyId: string;
  secret: string;
}

/** What a request does with a bucket, as its policy judges it (policy-actions.ts makes one). */
export interface BucketUse {
  action: string;
  /** The object's key, for an action on an object. */
  key: string | undefined;
  /** The object's version, when the request names one. */
  versionId?: string;
  principal: PolicyPrincipal;
  /** A condition key's value for this request (lower-case name); undefined when absent. */
  value(name: string, bucket: StoredBucket): Promise<string | undefined>;
}

const POLICY_MANAGEMENT = new Set(['s3:GetBucketPolicy', 's3:PutBucketPolicy', 's3:DeleteBucketPolicy']);

/** What the bucket's policy says of a use: 'deny' (an explicit Deny), 'allow' (an Allow), or 'none'. */
async function judged(bucket: StoredBucket, use: BucketUse): Promise<'allow' | 'deny' | 'none'> {
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

/**
 * Who may do what on the S3 endpoint: the store knows the keys and buckets it holds; the
 * platform (through its port) says whether each is in service. The two are asked at once, on
 * their own connections: every S3 request starts with these, and round trips are what a small
 * object's PUT or GET costs most. An accepted key is then kept in `keys` (a section of the
 * credential cache): the database announces every change of either record of a key, naming it,
 * and each process forgets that key on the announcement, so a revoke still stops the key at once
 * everywhere (the revoke's answer waits for the announcement to come back).
 */
export function createAccess(platform: S3Platform, store: EmbeddedObjectStore, keys?: CacheSection<Caller>) {
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
     * as any name the caller has not made, so that no organization learns another's names.
     */
    async bucket(caller: Caller, name: string, use?: BucketUse): Promise<StoredBucket> {
      const [activeId, stored] = await Promise.all([
        platform.activeBucketId(caller.orgId, name),
        store.objects.bucketNamed(caller.orgId, name),
      ]);
      if (stored && !stored.suspended && stored.id === activeId) {
        // The bucket's own organization always manages its policy (as AWS's account root does): no policy locks it out.
        if (use && !POLICY_MANAGEMENT.has(use.action) && (await judged(stored, use)) === 'deny') throw accessDenied();
        return stored;
      }
      if (!use || stored) throw noSuchBucket(name);
      // Another organization's bucket of that name that shares itself with the caller's (its policy or its ACLs).
      const orgId = use.principal.orgId;
      const objectAcl = async (candidate: StoredBucket) =>
        use.key === undefined ? null : ((await store.objects.version(candidate.id, use.key, use.versionId))?.acl ?? null);
      const shared: Array<{ bucket: StoredBucket; objectGrants: AclGrant[] | null }> = [];
      for (const candidate of await store.objects.bucketsSharedElsewhere(caller.orgId, name, use.key)) {
        const objectGrants = await objectAcl(candidate);
        const sharing =
          (candidate.policy !== null && sharesWith(storedPolicy(candidate.policy, name), use.principal)) ||
          aclSharesWith(effectiveGrants(candidate.acl, candidate), orgId) ||
          aclSharesWith(effectiveGrants(objectGrants, candidate), orgId);
        if (!sharing || (await platform.activeBucketId(candidate.org_id, name)) !== candidate.id) continue;
        shared.push({ bucket: candidate, objectGrants });
      }
      if (shared.length === 0) throw noSuchBucket(name);
      const allowed = [];
      for (const { bucket, objectGrants } of shared) {
        const verdict = await judged(bucket, use);
        if (verdict === 'deny') continue;
        if (
          (verdict === 'allow' && grantableToOthers(use.action)) ||
          aclAllows(effectiveGrants(bucket.acl, bucket), orgId, use.action, 'bucket') ||
          aclAllows(effectiveGrants(objectGrants, bucket), orgId, use.action, 'object')
        )
          allowed.push(bucket);
      }
      // Shared with the caller, so its name is no secret; what is not allowed is denied.
      if (allowed.length !== 1) throw accessDenied();
      return allowed[0]!;
    },

    /** Whether the bucket's policy and ACL let this use through (DeleteObjects asks for each key). */
    async allows(bucket: StoredBucket, use: BucketUse): Promise<boolean> {
      const verdict = await judged(bucket, use);
      if (verdict === 'deny') return false;
      return (
        bucket.org_id === use.principal.orgId ||
        (verdict === 'allow' && grantableToOthers(use.action)) ||
        aclAllows(effectiveGrants(bucket.acl, bucket), use.principal.orgId, use.action, 'bucket')
      );
    },

    /** What the platform says of buckets (their lifecycle goes through it). */
    platform,

    /** The caller's buckets that are served. */
    async buckets(caller: Caller): Promise<StoredBucket[]> {
      const [active, stored] = await Promise.all([platform.activeBucketIds(caller.orgId), store.objects.bucketsOf(caller.orgId)]);
      return stored.filter((bucket) => active.has(bucket.id));
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
