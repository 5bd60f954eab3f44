import { AnnouncedCache, sectionOf, type CacheSection } from '../../../db/announced-cache.ts';
import { CREDENTIAL_CHANNEL, credentialTagsOf } from '../../../core/credential-announcements.ts';
import type { DatabaseListener } from '../../../db/listener.ts';
import type { Principal } from '../../../core/principal.ts';

/** The tags of an API key's entry: the key itself and the member it acts for. */
export const apiKeyTags = (principal: Pick<Principal, 'tokenId' | 'memberId'>): string[] => [
  `api_token:${principal.tokenId}`,
  `member:${principal.memberId}`,
];

/** Key hashes remembered as verified (for the rate limits), at most; past that the oldest go. */
const MAX_VERIFIED = 100_000;

/**
 * API keys already looked up, by the hash of their secret, so that a request need not ask the
 * database who is calling. A revocation (or any change of a key or a member) is effective at
 * once in every process: the database announces it when it commits (see AnnouncedCache), naming
 * the key or member, and only that credential's entries are forgotten. Other kinds of credential
 * announced on the same channel (S3 access keys) keep entries in a `section` of it.
 *
 * Beside the entries, the hashes of the keys this process verified are remembered until their own
 * key or member changes (not when the cache starts over after a lost connection): the rate limits
 * ask it which budget a request counts against, and a working key must never be counted against
 * its address's anonymous budget because some other credential changed (README, "Rate limits").
 * It decides nothing else: every request's key is still looked up, in the entries or the database.
 */
export class CredentialCache extends AnnouncedCache<unknown> {
  /** Verified key hashes, each with the tags of its key and member (oldest first). */
  private readonly verified = new Map<string, readonly string[]>();
  /** The verified hashes of each tag. */
  private readonly verifiedByTag = new Map<string, Set<string>>();

  constructor(listener: DatabaseListener) {
    super(listener, CREDENTIAL_CHANNEL, credentialTagsOf);
  }

  /** The cached principal of a key hash, if any and still unexpired. */
  get(hash: string, now = Date.now()): Principal | undefined {
    return this.lookup(`key:${hash}`, now) as Principal | undefined;
  }

  /** Keeps a principal the database just confirmed (see AnnouncedCache.store), until the key expires. */
  put(ticket: number, hash: string, principal: Principal, expiresAt: Date | null): void {
    const tags = apiKeyTags(principal);
    this.store(ticket, `key:${hash}`, principal, expiresAt?.getTime(), tags);
    this.refused(hash);
    this.verified.set(hash, tags);
    for (const tag of tags) {
      const hashes = this.verifiedByTag.get(tag);
      if (hashes) hashes.add(hash);
      else this.verifiedByTag.set(tag, new Set([hash]));
    }
    if (this.verified.size > MAX_VERIFIED) this.refused(this.verified.keys().next().value!);
  }

  /** Whether this process verified the key of this hash, and no change of it (or its member) was announced since. */
  wasVerified(hash: string): boolean {
    return this.verified.has(hash);
  }

  /** The key of this hash turned out not to work (unknown, revoked, expired): it is no longer verified. */
  refused(hash: string): void {
    const tags = this.verified.get(hash);
    if (!tags) return;
    this.verified.delete(hash);
    for (const tag of tags) {
      const hashes = this.verifiedByTag.get(tag);
      hashes?.delete(hash);
      if (hashes?.size === 0) this.verifiedByTag.delete(tag);
    }
  }

  protected override forgotten(tags: readonly string[]): void {
    for (const tag of tags) for (const hash of [...(this.verifiedByTag.get(tag) ?? [])]) this.refused(hash);
  }

  /** Entries of another kind of credential, named apart from the API keys' (`kind` prefixes their names). */
  section<V>(kind: string): CacheSection<V> {
    return sectionOf<V>(this, kind);
  }
}
