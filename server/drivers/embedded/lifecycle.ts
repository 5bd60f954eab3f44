import { withTransaction, type PoolClient } from '../../db/pool.ts';
import { newVersionId } from './objects.ts';
import { addUsage, lockForWrite } from './quota.ts';
import { StoreRefusal } from './refusals.ts';
import { num } from './rows.ts';
import { dropGarbage, markGarbage, type StoreContext } from './write-path.ts';

/**
 * A bucket's lifecycle rules, as the S3 endpoint parsed them (s3/lifecycle.ts) and the store
 * keeps them (store_buckets.lifecycle). `prefix` is the rule-level Prefix of S3's older form;
 * `filter` the Filter of the newer one (kept apart to give the rules back as they were given).
 */
export interface LifecycleRule {
  id: string;
  enabled: boolean;
  prefix?: string;
  filter?: { prefix?: string; sizeGreaterThan?: number; sizeLessThan?: number; and?: boolean };
  expiration?: { days?: number; date?: string; expiredObjectDeleteMarker?: boolean };
  noncurrentExpiration?: { noncurrentDays?: number; newerNoncurrentVersions?: number };
  abortIncompleteUploadDays?: number;
}

/** The objects a rule is about: a key prefix and sizes. */
export function ruleScope(rule: LifecycleRule): { prefix: string; sizeGreaterThan: number | null; sizeLessThan: number | null } {
  return {
    prefix: rule.filter?.prefix ?? rule.prefix ?? '',
    sizeGreaterThan: rule.filter?.sizeGreaterThan ?? null,
    sizeLessThan: rule.filter?.sizeLessThan ?? null,
  };
}

/** Rows changed per transaction: a large backlog goes in many short ones, each holding the bucket's lock briefly. */
const BATCH = 100;

/**
 * When an object `days` days old (counted from `since`) expires: S3 rounds up to the next
 * midnight UTC, that is, to the next whole day; with a shorter day (tests, as Ceph's gateway's
 * debug interval), to the next whole one of those.
 */
export function expiryOf(since: Date, days: number, dayMs: number): Date {
  return new Date((Math.ceil(since.getTime() / dayMs) + days) * dayMs);
}

/** The latest instant an object may have been written at and be expired by `days` at `now` (the inverse of expiryOf). */
function cutoff(now: number, days: number, dayMs: number): Date {
  return new Date((Math.floor(now / dayMs) - days) * dayMs);
}

interface Candidate {
  key: string;
  seq: number;
  size_bytes: number;
}

/**
 * Applies every bucket's enabled lifecycle rules: current versions past their expiration go (an
 * unversioned key is deleted; a versioned one gets a delete marker), noncurrent versions past
 * theirs are deleted (the newest `newerNoncurrentVersions` kept), delete markers left alone on
 * their key go, and multipart uploads unfinished after their days are aborted. A version that
 * its object lock keeps is left. The usage moves with each change, as an S3 delete moves it, so
 * the freed bytes leave the metered storage at the next usage sample.
 *
 * Safe to run in several processes at once and to stop anywhere: each batch is one transaction
 * under the bucket's lock that changes a row only if it is still what was chosen (its `seq`, or
 * still the key's latest), so a second run finds nothing left to do, and work cut short by a
 * crash is done by the next run. The files of deleted versions are garbage committed with the
 * change (the sweep removes any a crash left).
 */
export function lifecycleOperations(context: StoreContext, dayMs: number) {
  const { pool } = context;

  /** What changing one version did: to the usage, and the files it freed. */
  type Change = { bytes: number; objects: number; freed: string[] };

  /** Runs one batch under the bucket's lock; says whether another may find more (a full batch that changed something). */
  const batch = async (
    orgId: string,
    bucketId: string,
    choose: (tx: PoolClient) => Promise<Candidate[]>,
    change: (tx: PoolClient, candidate: Candidate) => Promise<Change>,
  ): Promise<boolean> => {
    const { more, freed } = await withTransaction(pool, async (tx) => {
      await lockForWrite(tx, orgId, bucketId);
      const candidates = await choose(tx);
      const gone: string[] = [];
      let bytes = 0;
      let objects = 0;
      let changed = 0;
      for (const candidate of candidates) {
        const outcome = await change(tx, candidate);
        bytes += outcome.bytes;
        objects += outcome.objects;
        if (outcome.objects !== 0) changed++;
        gone.push(...outcome.freed);
      }
      await markGarbage(tx, gone);
      await addUsage(tx, orgId, bucketId, bytes, objects);
      return { more: candidates.length === BATCH && changed > 0, freed: gone };
    });
    await dropGarbage(context, freed);
    return more;
  };

  /** Deletes a version if it is still the one chosen and nothing keeps it. */
  const deleteVersion = async (tx: PoolClient, bucketId: string, candidate: Candidate) => {
    const { rows } = await tx.query<{ size_bytes: number; segments: Array<{ blob: string }> }>(
      `DELETE FROM store_versions WHERE bucket_id = $1 AND key = $2 AND seq = $3
         AND NOT legal_hold AND (lock_until IS NULL OR lock_until <= now()) RETURNING size_bytes, segments`,
      [bucketId, candidate.key, candidate.seq],
    );
    const gone = rows[0];
    if (!gone) return { bytes: 0, objects: 0, freed: [] };
    return { bytes: -num(gone.size_bytes), objects: -1, freed: gone.segments.map((segment) => segment.blob) };
  };

  const applyRule = async (bucket: { id: string; org_id: string; versioning: boolean }, rule: LifecycleRule, now: number) => {
    /** Batches of the versions `sql` chooses (with `args`), each changed by `change`, until none is left to change. */
    const sweep = async (sql: string, args: unknown[], change: (tx: PoolClient, candidate: Candidate) => Promise<Change>) => {
      const choose = async (tx: PoolClient) => (await tx.query<Candidate>(sql, args)).rows;
      while (await batch(bucket.org_id, bucket.id, choose, change));
    };
    const scope = ruleScope(rule);
    // Sizes are a version's own: filtered after the key's versions are ranked, never before.
    const inPrefix = `left(key, length($2)) = $2`;
    const ofSize = `($3::bigint IS NULL OR size_bytes > $3) AND ($4::bigint IS NULL OR size_bytes < $4)`;
    const scopeArgs = [bucket.id, scope.prefix, scope.sizeGreaterThan, scope.sizeLessThan];

    const expiration = rule.expiration;
    const expiredBefore =
      expiration?.days !== undefined
        ? cutoff(now, expiration.days, dayMs)
        : expiration?.date !== undefined && Date.parse(expiration.date) <= now
          ? new Date(now)
          : undefined;
    if (expiredBefore) {
      await sweep(
        `SELECT key, seq, size_bytes FROM (
           SELECT DISTINCT ON (key COLLATE "C") key, seq, size_bytes, delete_marker, last_modified FROM store_versions
           WHERE bucket_id = $1 AND ${inPrefix} ORDER BY key COLLATE "C", seq DESC
         ) latest WHERE NOT delete_marker AND last_modified <= $5 AND ${ofSize} LIMIT ${BATCH}`,
        [...scopeArgs, expiredBefore],
        async (tx, candidate) => {
          if (!bucket.versioning) return deleteVersion(tx, bucket.id, candidate);
          // Still the key's latest: a delete marker goes on top of it (the version stays, noncurrent).
          const { rowCount } = await tx.query(
            `INSERT INTO store_versions (bucket_id, key, version_id, delete_marker, size_bytes)
               SELECT $1, $2, $4, true, 0 WHERE (SELECT max(seq) FROM store_versions WHERE bucket_id = $1 AND key = $2) = $3`,
            [bucket.id, candidate.key, candidate.seq, newVersionId()],
          );
          return { bytes: 0, objects: rowCount ?? 0, freed: [] };
        },
      );
    }

    const noncurrent = rule.noncurrentExpiration;
    if (noncurrent?.noncurrentDays !== undefined) {
      const becameNoncurrentBefore = cutoff(now, noncurrent.noncurrentDays, dayMs);
      // A version becomes noncurrent when the next one is written: rank 1 is the key's latest.
      await sweep(
        `SELECT key, seq, size_bytes FROM (
           SELECT key, seq, size_bytes, legal_hold, lock_until,
             row_number() OVER (PARTITION BY key ORDER BY seq DESC) AS rank,
             lag(last_modified) OVER (PARTITION BY key ORDER BY seq DESC) AS noncurrent_since
           FROM store_versions WHERE bucket_id = $1 AND ${inPrefix}
         ) v WHERE rank > 1 + $6 AND noncurrent_since <= $5 AND ${ofSize}
           AND NOT legal_hold AND (lock_until IS NULL OR lock_until <= now())
         LIMIT ${BATCH}`,
        [...scopeArgs, becameNoncurrentBefore, noncurrent.newerNoncurrentVersions ?? 0],
        (tx, candidate) => deleteVersion(tx, bucket.id, candidate),
      );
    }

    if (expiration?.expiredObjectDeleteMarker) {
      await sweep(
        `SELECT key, seq, size_bytes FROM store_versions v WHERE bucket_id = $1 AND delete_marker
           AND left(key, length($2)) = $2
           AND NOT EXISTS (SELECT 1 FROM store_versions o WHERE o.bucket_id = v.bucket_id AND o.key = v.key AND o.seq <> v.seq)
         LIMIT ${BATCH}`,
        [bucket.id, scope.prefix],
        async (tx, candidate) => {
          // Only while it is still alone on its key.
          const { rowCount } = await tx.query(
            `DELETE FROM store_versions v WHERE bucket_id = $1 AND key = $2 AND seq = $3 AND delete_marker
                 AND NOT EXISTS (SELECT 1 FROM store_versions o WHERE o.bucket_id = v.bucket_id AND o.key = v.key AND o.seq <> v.seq)`,
            [bucket.id, candidate.key, candidate.seq],
          );
          return { bytes: 0, objects: -(rowCount ?? 0), freed: [] };
        },
      );
    }

    if (rule.abortIncompleteUploadDays !== undefined) {
      const initiatedBefore = cutoff(now, rule.abortIncompleteUploadDays, dayMs);
      for (;;) {
        const freed = await withTransaction(pool, async (tx) => {
          // SKIP LOCKED: an upload being completed right now is left to finish.
          const { rows } = await tx.query<{ upload_id: string }>(
            `SELECT upload_id FROM store_uploads WHERE bucket_id = $1 AND left(key, length($2)) = $2 AND initiated <= $3
             ORDER BY initiated LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
            [bucket.id, scope.prefix, initiatedBefore],
          );
          const ids = rows.map((row) => row.upload_id);
          if (ids.length === 0) return undefined;
          const parts = await tx.query<{ blob: string }>('SELECT blob FROM store_parts WHERE upload_id = ANY($1::text[])', [ids]);
          const blobs = parts.rows.map((row) => row.blob);
          await markGarbage(tx, blobs);
          await tx.query('DELETE FROM store_uploads WHERE upload_id = ANY($1::text[])', [ids]);
          return { blobs, count: ids.length };
        });
        if (!freed) break;
        await dropGarbage(context, freed.blobs);
        if (freed.count < BATCH) break;
      }
    }
  };

  return {
    /** The length of a lifecycle day (S3_LIFECYCLE_DAY_SECONDS; a day, unless a test shortens it). */
    dayMs,

    /** One pass over every bucket with rules; `signal` stops it between batches. */
    async run(signal?: AbortSignal): Promise<void> {
      const { rows } = await pool.query<{ id: string; org_id: string; versioning: boolean; lifecycle: LifecycleRule[]; now: Date }>(
        'SELECT id, org_id, versioning, lifecycle, now() AS now FROM store_buckets WHERE lifecycle IS NOT NULL AND NOT suspended',
      );
      for (const bucket of rows) {
        for (const rule of bucket.lifecycle) {
          if (signal?.aborted) return;
          if (!rule.enabled) continue;
          try {
            await applyRule(bucket, rule, new Date(bucket.now).getTime());
          } catch (error) {
            // Deleted or suspended meanwhile: nothing more to do there.
            if (error instanceof StoreRefusal && error.code === 'NoSuchBucket') break;
            throw error;
          }
        }
      }
    },
  };
}
