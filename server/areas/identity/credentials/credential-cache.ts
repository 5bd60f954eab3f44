import { AnnouncedCache, type CacheSection } from '../../../db/announced-cache.ts';
import type { DatabaseListener } from '../../../db/listener.ts';
import type { Principal } from '../../../core/principal.ts';

/** Announced by the database when an API key or a member changes (migration 0800_credential_changes.sql). */
export const CREDENTIALS_CHANNEL = 'credentials_changed';
/** Where each cache answers a sync of a credential change. */
const SYNCED_CHANNEL = 'credentials_synced';

/**
 * API keys already looked up, by the hash of their secret, so that a request need not ask the
 * database who is calling. A revocation (or any change of a key or a member) is effective at
 * once in every process: the database announces it when it commits (see AnnouncedCache).
 * Other kinds of credential announced on the same channel (S3 access keys) keep entries in a
 * `section` of it, forgotten with the rest on every announcement.
 */
export class CredentialCache extends AnnouncedCache<unknown> {
  constructor(listener: DatabaseListener) {
    super(listener, { changed: CREDENTIALS_CHANNEL, synced: SYNCED_CHANNEL });
  }

  /** The cached principal of a key hash, if any and still unexpired. */
  get(hash: string, now = Date.now()): Principal | undefined {
    return this.lookup(`key:${hash}`, now) as Principal | undefined;
  }

  /** Keeps a principal the database just confirmed (see AnnouncedCache.store), until the key expires. */
  put(ticket: number, hash: string, principal: Principal, expiresAt: Date | null): void {
    this.store(ticket, `key:${hash}`, principal, expiresAt?.getTime());
  }

  /** Entries of another kind of credential, named apart from the API keys' (`kind` prefixes their names). */
  section<V>(kind: string): CacheSection<V> {
    return {
      get: (name) => this.lookup(`${kind}:${name}`) as V | undefined,
      ticket: () => this.ticket(),
      put: (ticket, name, value) => this.store(ticket, `${kind}:${name}`, value),
      changed: () => this.changed(),
    };
  }
}
