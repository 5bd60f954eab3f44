import type { CacheSection } from '../../../db/announced-cache.ts';
import type { StoredBucket } from '../rows.ts';
import type { EmbeddedObjectStore } from '../store.ts';
import { S3Error, accessDenied, noSuchBucket } from './errors.ts';
import type { S3Platform } from './platform-port.ts';
import { evaluatePolicy, sharesWith, storedPolicy, type PolicyPrincipal } from './policy.ts';
import { grantableToOthers } from './policy-actions.ts';

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
     * allows the use to the caller's organization (object operations and listings only); a name
     * whose bucket shares nothing with the caller is NoSuchBucket, as any name the caller has not
     * made, so that no organization learns another's names.
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
      const shared = [];
      for (const candidate of await store.objects.bucketsNamedWithPolicy(name)) {
        if (candidate.org_id === caller.orgId || !sharesWith(storedPolicy(candidate.policy!, name), use.principal)) continue;
        if ((await platform.activeBucketId(candidate.org_id, name)) !== candidate.id) continue;
        shared.push(candidate);
      }
      if (shared.length === 0) throw noSuchBucket(name);
      const allowed = [];
      if (grantableToOthers(use.action))
        for (const candidate of shared) if ((await judged(candidate, use)) === 'allow') allowed.push(candidate);
      // Shared with the caller, so its name is no secret; what the policy does not allow is denied.
      if (allowed.length !== 1) throw accessDenied();
      return allowed[0]!;
    },

    /** Whether the bucket's policy lets this use through (DeleteObjects asks for each key). */
    async allows(bucket: StoredBucket, use: BucketUse): Promise<boolean> {
      const verdict = await judged(bucket, use);
      if (verdict === 'deny') return false;
      return bucket.org_id === use.principal.orgId || (verdict === 'allow' && grantableToOthers(use.action));
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
