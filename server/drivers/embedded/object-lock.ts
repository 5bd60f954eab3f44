import { withTransaction, type PoolClient } from '../../db/pool.ts';
import { StoreRefusal } from './refusals.ts';
import type { StoreContext } from './write-path.ts';
import { versionOf, type Retention, type StoredBucket, type StoredVersion } from './rows.ts';

/**
 * Object lock (S3's WORM protection) as the store enforces it. A bucket has it from its creation
 * (or from the moment it is turned on while versioning is enabled) and never loses it; its
 * versions may carry a retention (GOVERNANCE: kept unless the request bypasses governance;
 * COMPLIANCE: kept, by everyone, until the date) and a legal hold (kept until the hold is lifted).
 * A kept version cannot be deleted by its id, nor replaced (object lock keeps versioning on, so a
 * write adds a version; a delete without an id adds a delete marker, which S3 allows).
 */
export interface VersionLock {
  retention?: Retention;
  legalHold?: boolean;
}

export type DefaultRetention = NonNullable<StoredBucket['object_lock_default']>;

const denied = (why: string) => new StoreRefusal('AccessDenied', why);

/** Refuses to delete (or replace) a version that its retention or legal hold keeps. */
export function assertMayDelete(version: StoredVersion, options: { bypassGovernance: boolean; now: Date }): void {
  if (version.legal_hold) throw denied('The object version is under a legal hold');
  if (version.lock_mode && version.lock_until && version.lock_until > options.now) {
    if (version.lock_mode === 'COMPLIANCE') throw denied('The object version is under COMPLIANCE retention');
    if (!options.bypassGovernance) throw denied('The object version is under GOVERNANCE retention');
  }
}

/** Whether a version is kept by its lock now (the lifecycle run leaves such versions alone). */
export function isLocked(version: StoredVersion, now: Date): boolean {
  return version.legal_hold || (version.lock_until !== null && version.lock_until > now);
}

/**
 * Refuses a retention change that S3 refuses: under COMPLIANCE, no other mode nor an earlier
 * date; under GOVERNANCE, neither unless the request bypasses governance. A later date in the
 * same mode is always allowed; so is anything once the retention has passed.
 */
export function assertRetentionChange(
  current: StoredVersion,
  next: Retention | null,
  options: { bypassGovernance: boolean; now: Date },
): void {
  if (!current.lock_mode || !current.lock_until || current.lock_until <= options.now) return;
  const weakens = !next || next.mode !== current.lock_mode || next.until < current.lock_until;
  if (!weakens) return;
  if (current.lock_mode === 'COMPLIANCE') throw denied('A COMPLIANCE retention can be neither shortened nor changed');
  if (!options.bypassGovernance) throw denied('Shortening or changing a GOVERNANCE retention needs x-amz-bypass-governance-retention');
}

/** The retention a new version gets from its bucket's default, counted from `now`. */
export function defaultRetentionFrom(rule: DefaultRetention | null, now: Date): Retention | undefined {
  if (!rule) return undefined;
  const until = new Date(now);
  if (rule.days !== undefined) until.setUTCDate(until.getUTCDate() + rule.days);
  if (rule.years !== undefined) until.setUTCFullYear(until.getUTCFullYear() + rule.years);
  return { mode: rule.mode, until };
}

/**
 * Turns object lock on for a versioned bucket; false (nothing changed) when the bucket is not
 * versioned. S3 creates a bucket asked with `x-amz-bucket-object-lock-enabled: true` versioned
 * and locked: S3's CreateBucket creates it through the platform with versioning, then calls this
 * once the store holds it. PutObjectLockConfiguration calls it too (S3 lets a versioned bucket
 * turn object lock on). Nothing turns it off, and a locked bucket's versioning cannot be suspended.
 */
export async function enableObjectLock(
  { pool, cachesSynced }: Pick<StoreContext, 'pool' | 'cachesSynced'>,
  bucketId: string,
): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE store_buckets SET object_lock_enabled = true WHERE id = $1 AND versioning', [bucketId]);
  if (rowCount === 1) await cachesSynced();
  return rowCount === 1;
}

/** Changes of a version's lock (PutObjectRetention, PutObjectLegalHold), checked under the version's row lock. */
export function objectLockOperations(context: Pick<StoreContext, 'pool' | 'cachesSynced'>) {
  const { pool } = context;
  /** The version (the latest one without an id), locked for the change; NoSuchKey/NoSuchVersion otherwise. */
  const lockedVersion = async (tx: PoolClient, bucketId: string, key: string, versionId: string | undefined): Promise<StoredVersion> => {
    const { rows } =
      versionId === undefined
        ? await tx.query<StoredVersion>(
            'SELECT * FROM store_versions WHERE bucket_id = $1 AND key = $2 ORDER BY seq DESC LIMIT 1 FOR UPDATE',
            [bucketId, key],
          )
        : await tx.query<StoredVersion>('SELECT * FROM store_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3 FOR UPDATE', [
            bucketId,
            key,
            versionId,
          ]);
    const version = rows[0] && versionOf(rows[0]);
    if (!version || (version.delete_marker && versionId === undefined))
      throw new StoreRefusal(versionId === undefined ? 'NoSuchKey' : 'NoSuchVersion', 'The specified key does not exist.');
    if (version.delete_marker) throw new StoreRefusal('MethodNotAllowed', 'The specified method is not allowed against this resource.');
    return version;
  };

  return {
    enable: (bucketId: string) => enableObjectLock(context, bucketId),

    async setRetention(
      bucketId: string,
      key: string,
      versionId: string | undefined,
      retention: Retention | null,
      options: { bypassGovernance: boolean },
    ): Promise<StoredVersion> {
      return withTransaction(pool, async (tx) => {
        const version = await lockedVersion(tx, bucketId, key, versionId);
        assertRetentionChange(version, retention, { ...options, now: new Date() });
        const { rows } = await tx.query<StoredVersion>(
          'UPDATE store_versions SET lock_mode = $4, lock_until = $5 WHERE bucket_id = $1 AND key = $2 AND version_id = $3 RETURNING *',
          [bucketId, key, version.version_id, retention?.mode ?? null, retention?.until ?? null],
        );
        return versionOf(rows[0]!);
      });
    },

    async setLegalHold(bucketId: string, key: string, versionId: string | undefined, on: boolean): Promise<StoredVersion> {
      return withTransaction(pool, async (tx) => {
        const version = await lockedVersion(tx, bucketId, key, versionId);
        const { rows } = await tx.query<StoredVersion>(
          'UPDATE store_versions SET legal_hold = $4 WHERE bucket_id = $1 AND key = $2 AND version_id = $3 RETURNING *',
          [bucketId, key, version.version_id, on],
        );
        return versionOf(rows[0]!);
      });
    },
  };
}
