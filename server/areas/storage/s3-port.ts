import { auditStatement, recordAudit } from '../../core/audit.ts';
import { DomainError } from '../../core/errors.ts';
import type { Actor } from '../../core/principal.ts';
import { withTransaction, type Pool, type PoolClient } from '../../db/pool.ts';
import type { PlatformBucket, S3Actor, S3Platform } from '../../drivers/embedded/s3/platform-port.ts';
import type { Clock } from '../../core/clock.ts';
import type { ObjectStoreDriver } from '../../drivers/object-store.ts';
import type { Logger } from '../../logging.ts';
import { assertBucketName } from './buckets/bucket-name.ts';
import { findBucketByName, recordBucketObservation, toBucketOut, type BucketRow } from './buckets/bucket-rows.ts';
import type { BucketService } from './buckets/bucket-service.ts';

/** The audit realm of a request on the S3 endpoint (the contract's `actor_realm`). */
export const S3_ACCESS_KEY_REALM = 's3_access_key';

/** The actor an S3 request's audit event names: the access key that signed it. */
const actorOf = (actor: S3Actor): Actor => ({ subject: actor.accessKeyId, realm: S3_ACCESS_KEY_REALM, tokenId: actor.keyId });

const platformBucket = (row: BucketRow): PlatformBucket => ({
  id: row.id,
  name: row.name,
  state: row.state,
  versioning: row.versioning,
  operationId: row.operation_id,
  purgeAfter: row.purge_after,
});

/** Pauses between reads of an operation being waited for: short at first (a bucket is made in milliseconds), then longer. */
const SETTLE_POLL_MS = [10, 20, 40, 80, 160, 250];

/** What the S3 endpoint changes through the platform (its bucket lifecycle); the rest it only reads. */
export const S3_PLATFORM_CHANGES = ['createBucket', 'deleteBucket', 'setBucketVersioning'] as const;
type S3PlatformReads = Omit<S3Platform, (typeof S3_PLATFORM_CHANGES)[number]>;

/**
 * What the S3 endpoint reads of the platform: plain queries, which the endpoint's own thread runs
 * on its own connections (the changes go through the main thread's services: s3-thread.ts).
 */
export function s3Reads(pool: Pool): S3PlatformReads {
  return {
    async activeKey(accessKeyId) {
      const { rows } = await pool.query<{ org_id: string; id: string }>(
        `SELECT org_id, id FROM s3_access_keys WHERE objectstore_access_key_id = $1 AND state = 'active'`,
        [accessKeyId],
      );
      return rows[0] && { orgId: rows[0].org_id, keyId: rows[0].id };
    },

    async activeBucketId(orgId, name) {
      const { rows } = await pool.query<{ id: string }>(`SELECT id FROM buckets WHERE org_id = $1 AND name = $2 AND state = 'active'`, [
        orgId,
        name,
      ]);
      return rows[0]?.id;
    },

    async activeBucketIds(orgId) {
      const { rows } = await pool.query<{ id: string }>(`SELECT id FROM buckets WHERE org_id = $1 AND state = 'active'`, [orgId]);
      return new Set(rows.map((row) => row.id));
    },

    async bucketNamed(orgId, name) {
      const bucket = await findBucketByName(pool, orgId, name);
      return bucket && platformBucket(bucket);
    },

    settingAudit(change) {
      return auditStatement({
        orgId: change.orgId,
        action: change.action,
        resourceType: 'bucket',
        resourceId: change.bucketId,
        before: change.before,
        after: change.after,
        operationId: null,
        actor: actorOf(change.actor),
        result: 'succeeded',
        requestId: change.actor.requestId,
      });
    },
    async settled(orgId, operationId, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (let round = 0; ; round++) {
        const { rows } = await pool.query<{ state: string }>('SELECT state FROM operations WHERE org_id = $1 AND id = $2', [
          orgId,
          operationId,
        ]);
        const state = rows[0]?.state;
        if (state === 'succeeded' || state === 'failed' || state === 'cancelled') return state;
        if (state === undefined) return 'cancelled';
        const pause = SETTLE_POLL_MS[Math.min(round, SETTLE_POLL_MS.length - 1)]!;
        if (Date.now() + pause > deadline) return 'pending';
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    },
  };
}

/**
 * The storage area's answers to the S3 endpoint (drivers/embedded/s3/platform-port.ts), from the
 * platform's own records: an access key serves while it is `active` (a revoke stops it at the
 * request), a bucket while it is `active` (creating, deleting, soft-deleted or in error: not).
 * Bucket changes go through the bucket service, as the API's do, each in one transaction with
 * its audit event (actor: the access key); a refused change leaves a `failed` event.
 */
export function s3Port({
  pool,
  buckets,
  objectStore,
  clock,
  cachesSynced,
  log,
}: {
  pool: Pool;
  buckets: BucketService;
  objectStore: ObjectStoreDriver;
  clock: Clock;
  /** Returns once every process has read what this one committed (DatabaseListener.sync). */
  cachesSynced: () => Promise<void>;
  log: Logger;
}): S3Platform {
  /** A change and its audit event in one transaction; a refusal leaves an event of its own. */
  const change = async (
    actor: S3Actor,
    action: string,
    bucketId: string | null,
    work: (tx: PoolClient) => Promise<{ bucket: BucketRow; before: BucketRow | null; operation?: { id: string } }>,
    /** Checks made before the transaction (a backend call must not hold a transaction open). */
    precheck?: () => Promise<void>,
  ): Promise<{ bucket: PlatformBucket; operationId: string | null }> => {
    try {
      await precheck?.();
      const made = await withTransaction(pool, work, (result) =>
        auditStatement({
          orgId: actor.orgId,
          action,
          resourceType: 'bucket',
          resourceId: result.bucket.id,
          before: result.before ? toBucketOut(result.before) : null,
          after: toBucketOut(result.bucket),
          operationId: result.operation?.id ?? null,
          actor: actorOf(actor),
          result: 'succeeded',
          requestId: actor.requestId,
        }),
      );
      return { bucket: platformBucket(made.bucket), operationId: made.operation?.id ?? null };
    } catch (error) {
      if (error instanceof DomainError) {
        await recordAudit(pool, {
          orgId: actor.orgId,
          action,
          resourceType: 'bucket',
          resourceId: bucketId,
          actor: actorOf(actor),
          result: error.kind === 'forbidden' ? 'denied' : 'failed',
          reason: `${error.code}: ${error.detail}`,
          requestId: actor.requestId,
        }).catch((auditError: unknown) => log.warn({ err: auditError }, 'the audit event of a refused S3 bucket change was not written'));
      }
      throw error;
    }
  };

  /** The organization's bucket of that name, or a refusal naming it as the API's 404 would. */
  const named = async (orgId: string, name: string): Promise<BucketRow> => {
    const bucket = await findBucketByName(pool, orgId, name);
    if (!bucket) throw new DomainError('not_found', 'not_found', 'Resource not found', `No bucket named ${name} in this organization.`);
    return bucket;
  };

  return {
    ...s3Reads(pool),

    async createBucket(actor, request) {
      return change(actor, 'bucket.create', null, async (tx) => {
        assertBucketName(request.name);
        return buckets.create(tx, actor.orgId, { name: request.name, versioning: request.versioning });
      });
    },

    async deleteBucket(actor, name) {
      const bucket = await named(actor.orgId, name);
      const deleting = await change(
        actor,
        'bucket.delete',
        bucket.id,
        (tx) => buckets.delete(tx, actor.orgId, bucket.id),
        // The not-empty check asks the store (as the API's delete does).
        () => buckets.assertDeletable(pool, actor.orgId, bucket.id, log),
      );
      // No longer active: answered once no S3 endpoint serves it from its cache (s3/access.ts).
      await cachesSynced();
      return deleting;
    },

    /**
     * The desired value changes (with its audit event), then the store is given the desired value
     * as it is then, until what it applied is still the desired value: two changes at once end
     * with the store as the later one left the desired value.
     */
    async setBucketVersioning(actor, name, enabled) {
      const bucket = await named(actor.orgId, name);
      const changed = await change(actor, 'bucket.set_versioning', bucket.id, (tx) =>
        buckets.setVersioning(tx, actor.orgId, bucket.id, enabled),
      );
      for (let applied: boolean | undefined; ;) {
        const desired = await findBucketByName(pool, actor.orgId, name);
        if (!desired || desired.id !== bucket.id || desired.versioning === applied) break;
        const report = await objectStore.setBucketVersioning({
          orgId: actor.orgId,
          bucketId: bucket.id,
          name,
          versioning: desired.versioning,
        });
        // Stamped once the store answered, as the executors stamp theirs: a reconciler pass that read
        // the store before the change, and stamped its reading after this call began, must not win.
        await recordBucketObservation(pool, bucket.id, report, clock.now());
        applied = desired.versioning;
      }
      return changed;
    },
  };
}
