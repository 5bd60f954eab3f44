import { randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Pool, PoolClient } from '../../db/pool.ts';
import { BlobFiles } from './blobs.ts';
import { fileClaims } from './file-claims.ts';
import { orgWriteGroups, type Batch } from './org-write-groups.ts';
import { assertWithinLimits, lockWithSnapshot, reservedSpace, type Locked } from './quota.ts';
import { StoreRefusal } from './refusals.ts';
import type { Segment } from './rows.ts';
import { sealingTransform, type BlobSealing, type ObjectKeyring, type WrappingKey } from './sealing.ts';

/** What the store needs to carry out a write: its database, files and the process's instance number. */
export interface StoreContext {
  pool: Pool;
  blobs: BlobFiles;
  /** This process; its reservations are swept when it is gone (see sweep.ts). */
  instance: number;
  /** The data keys of blobs sealed at rest (SSE-S3, SSE-C). */
  keyring: ObjectKeyring;
  /**
   * Returns once every listener of the platform, in every process, has read what this process
   * committed (DatabaseListener.sync): a change of what a bucket serves with (its settings, its
   * versioning, its suspension) answers only once no S3 endpoint's cache serves the bucket as it
   * was (s3/access.ts).
   */
  cachesSynced: () => Promise<void>;
}

export interface WriteSpec<T, Item = unknown> {
  orgId: string;
  bucketId: string;
  /** Bytes the body carries (declared up front: Content-Length, or the decoded length of aws-chunked). */
  size: number;
  /**
   * `size` is at most what the body carries, not its exact length: a browser form's file, whose
   * length is known only at its end (the form's length bounds it). Space is reserved for `size`.
   */
  sizeIsLimit?: boolean;
  /** Seals the bytes on their way to the file, after every observer has seen them plain (encryption at rest). */
  seal?: Transform;
  /** The object's key, when the write replaces its unversioned version (read with the locks: `locked.snapshot`). */
  key?: string;
  /** Objects the write adds (1 for an object, 0 for a part). */
  objects: number;
  /**
   * The bytes: a stream, or an existing blob whose bytes the write takes as they are, sharing its
   * file (`BlobFiles.share`; `size` is then what they hold, and nothing is read or observed).
   */
  body: Readable | SharedBytes;
  /** Observers of the bytes on their way to the file (digests and checksums). */
  transforms: Transform[];
  /** What the write replaces (an unversioned key's version, a part of the same number); for the early check. */
  replaces(tx: PoolClient, locked: Locked): Promise<{ bytes: number; objects: number }>;
  /** Called once every byte is written, before anything is visible: rejects to refuse (BadDigest…). */
  verify(): Promise<void>;
  /** In the committing transaction (locks held, own reservation released): makes the write visible. `size`: the bytes written. */
  commit(tx: PoolClient, locked: Locked, blob: string, size: number): Promise<T>;
  /**
   * In place of `commit`, for a write that can: its commit as an item of a batch, which commits
   * it (the locks, the release of `reservation`, the limits and the row) in the statement that
   * commits the organization's other writes of the batch next to it in its group. Asked once the
   * write is verified.
   */
  batchedCommit?: { batch: Batch<Item, T>; item(reservation: string, blob: string, size: number): Item };
  /** Upload whose parts do not count as held space (its own, when completing it). */
  excludeUpload?: string;
  /**
   * The body is read at once, without reserving space, its limits checked as it commits (see
   * `streamedWrite`): set for a small body whose client is not waiting to be asked for it (no
   * `Expect: 100-continue`).
   */
  readEarly?: boolean;
}

/** A write's bytes taken from an existing blob (see `WriteSpec.body`). */
export interface SharedBytes {
  sharedBlob: string;
}

/**
 * A new blob's bytes as an object or a part is given them: a stream, or the one segment of an
 * existing version, whose file the new blob shares (a copy whose bytes do not change: see
 * BlobFiles.share).
 */
export type BlobSource = Readable | { sharedSegment: Segment };

/**
 * How a blob is written from `source`: a stream is sealed under a new data key when `wrapping`
 * asks for it; a shared segment's file is taken as it is, with the sealing it has (the caller
 * shares only a segment sealed as the new blob is to be).
 */
export function blobWrite(
  keyring: ObjectKeyring,
  source: BlobSource,
  wrapping: WrappingKey | undefined,
): { body: Readable | SharedBytes; seal?: Transform; sealing?: BlobSealing } {
  if ('sharedSegment' in source) return { body: { sharedBlob: source.sharedSegment.blob }, sealing: source.sharedSegment.sealing };
  if (!wrapping) return { body: source };
  const { dataKey, sealing } = keyring.newDataKey(wrapping);
  return { body: source, seal: sealingTransform(dataKey), sealing };
}

/** Bodies up to this size are read at once, without reserving space (`WriteSpec.readEarly`). */
export const READ_EARLY_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Bodies read at once up to this size are written in place once claimed, rather than into a
 * temporary file while claimed: a small body's time is its calls to the file system, which this
 * saves; a larger one's is its bytes, which the claim's round trip would then delay.
 */
const IN_PLACE_MAX_BYTES = 256 * 1024;

/**
 * The one way bytes enter the store: space is reserved under the organization's lock before the
 * first byte is read (a write that cannot fit is refused at once, with nothing stored), the bytes
 * are streamed to a temporary file, verified, moved into place and synced, and one short
 * transaction checks the limits again exactly and commits the row that makes them visible (once
 * the bytes are durable). Any failure removes the file and releases the space. Both transactions
 * are shared with the organization's writes arriving with them (org-write-groups.ts): one lock
 * and one WAL flush for all of them, each write in a savepoint of its own.
 *
 * A small body sent without waiting to be asked (`readEarly`) reserves no space: it is read at
 * once, and its limits are checked once, exactly, as it commits (a write that cannot fit is
 * refused then, with nothing stored). The body comes whether or not it is asked for, so a
 * reservation bought it nothing, and it cost a second turn under the organization's lock, where
 * one organization's writes go one after another: half of a small PUT's time there. It only
 * claims its file (a reservation of no space, outside the lock), so that a crash leaves nothing
 * the sweep does not find, and, once that claim is durable and if it is small
 * (`IN_PLACE_MAX_BYTES`), is written straight into its place in `blobs/`: seven calls to the file
 * system rather than the ten of a temporary file renamed and synced.
 *
 * The reservation's COMMIT is not waited for before the bytes start: its WAL flush overlaps the
 * streaming (the lock it holds keeps other writers waiting until it is visible, so the quota
 * stays exact). It is waited for before the file moves into `blobs/`: from then on a crash must
 * find the reservation that names the file. A temporary file without one is swept as an orphan.
 */
export async function streamedWrite<T, Item>(context: StoreContext, spec: WriteSpec<T, Item>): Promise<T> {
  const { pool, blobs } = context;
  const reservationId = randomUUID();
  const blob = BlobFiles.newName();
  const groups = orgWriteGroups(pool);
  const shared = 'sharedBlob' in spec.body ? spec.body.sharedBlob : undefined;
  const body = shared === undefined ? (spec.body as Readable) : undefined;
  const early = body !== undefined && spec.readEarly === true && spec.size <= READ_EARLY_MAX_BYTES;
  const inPlace = early && spec.size <= IN_PLACE_MAX_BYTES;
  const reservation = early ? claimFile(context, spec, reservationId, blob) : reserveSpace(context, spec, reservationId, blob);
  const guard = lengthGuard(spec.size);
  const transforms = [guard.transform, ...spec.transforms, ...(spec.seal ? [spec.seal] : [])];
  // A small body the client sends anyway is written once its file is claimed, straight into its
  // place in `blobs/` (no temporary file, no rename): the claim, durable by then, names it, so a
  // crash from there on leaves a file the sweep finds, and no row names it before `publish` has
  // synced it. Its bytes wait in the socket meanwhile (a grouped claim's round trip).
  // A larger one is read into its temporary file while its file is claimed: the claim's round
  // trip is not added to its time. Nothing of it is visible or in `blobs/` before the claim is
  // durable (`publish` waits for it, as below), and a crash meanwhile leaves only a temporary file
  // without a reservation, which the sweep removes. A bucket that is not there stops the reading.
  const readingEarly = early && !inPlace ? new AbortController() : undefined;
  const writing = readingEarly ? blobs.write(blob, body!, transforms, { signal: readingEarly.signal }) : undefined;
  writing?.catch(() => {});
  let reserved: Promise<void>;
  try {
    reserved = (await reservation).committed;
  } catch (error) {
    if (writing) {
      readingEarly!.abort(error);
      // Stopped, or already complete: either way its file goes.
      await writing.catch(() => {});
      await blobs.remove(blob).catch(() => {});
    }
    throw error;
  }
  let published: Promise<void> | undefined;
  try {
    if (shared !== undefined) await blobs.share(blob, shared);
    else await (writing ?? blobs.write(blob, body!, transforms, { inPlace }));
    // What the body carried, before any sealing (the file may hold more: the seal's tags).
    const written = shared !== undefined ? spec.size : guard.seen();
    if (written !== spec.size && !spec.sizeIsLimit)
      throw new StoreRefusal('IncompleteBody', `You did not provide the number of bytes specified by the Content-Length HTTP header`);
    // The file moves into place and is flushed (its bytes and its name) while the last digests
    // come back from the hashing workers and while the committing transaction does its work.
    published = reserved.then(() => blobs.publish(blob));
    published.catch(() => {});
    const verified = spec.verify();
    verified.catch(() => {});
    // The row that makes the bytes visible is written, but COMMIT is sent only once they are
    // durable (`published`, the group's beforeCommit): until COMMIT the row exists in no one's
    // view and in no durable state (a crash aborts the transaction; a failed flush rolls it back),
    // so no committed row ever names bytes a crash could lose; the statements just do not wait
    // for the flush. The locks are held meanwhile (about a disk flush).
    const { result, committed } = spec.batchedCommit
      ? await verified.then(() =>
          groups.runBatched(spec.orgId, spec.batchedCommit!.batch, spec.batchedCommit!.item(reservationId, blob, written), published),
        )
      : await groups.run(
          spec.orgId,
          async (tx) => {
            const locked = await lockWithSnapshot(tx, spec.orgId, spec.bucketId, {
              key: spec.key,
              excludeUpload: spec.excludeUpload,
              release: reservationId,
            });
            // The row needs the digests (its ETag and checksums); a mismatch rolls this write back alone.
            await verified;
            return spec.commit(tx, locked, blob, written);
          },
          published,
        );
    await committed;
    return result;
  } catch (error) {
    // The reservation may still be committing: its row is deleted once it is there (or never was).
    await reserved.catch(() => {});
    // A rename in flight would otherwise put the file in place after its removal.
    await published?.catch(() => {});
    await blobs.remove(blob).catch(() => {});
    await pool.query('DELETE FROM store_reservations WHERE id = $1', [reservationId]).catch(() => {});
    throw error;
  }
}

/**
 * Reserves the write's space in a transaction of the organization's writes, refusing it at once
 * when it cannot fit (with what it replaces given back). Resolves once the statements are done,
 * with the COMMIT that makes the reservation durable.
 */
function reserveSpace<T, Item>(
  context: StoreContext,
  spec: WriteSpec<T, Item>,
  id: string,
  blob: string,
): Promise<{ committed: Promise<void> }> {
  return orgWriteGroups(context.pool).run(spec.orgId, async (tx) => {
    // The reservation is inserted with the reads; should the limits refuse the write, the
    // transaction rolls it back and no one has seen it.
    const locked = await lockWithSnapshot(tx, spec.orgId, spec.bucketId, {
      key: spec.key,
      excludeUpload: spec.excludeUpload,
      reserve: { id, bytes: spec.size, objects: spec.objects, blob, instance: context.instance },
    });
    const replaced = await spec.replaces(tx, locked);
    assertWithinLimits(locked, locked.snapshot!.held, { bytes: spec.size - replaced.bytes, objects: spec.objects - replaced.objects });
  });
}

/**
 * Claims the write's file without reserving space: a reservation of no bytes and no objects, so
 * that the sweep finds the file should this process end, inserted without the organization's
 * lock (it changes no one's limits). The bucket must be served, as a reservation's lock asks.
 * Durable once the statement returns; the claims of writes arriving together share it (file-claims.ts).
 */
async function claimFile<T, Item>(
  context: StoreContext,
  spec: WriteSpec<T, Item>,
  id: string,
  blob: string,
): Promise<{ committed: Promise<void> }> {
  const claimed = await fileClaims(context.pool)({ id, blob, instance: context.instance, bucketId: spec.bucketId, orgId: spec.orgId });
  if (!claimed) throw new StoreRefusal('NoSuchBucket', 'The specified bucket does not exist');
  return { committed: Promise.resolve() };
}

/** Stops a body that carries more bytes than it declared, and counts what it carried. */
function lengthGuard(size: number): { transform: Transform; seen(): number } {
  let seen = 0;
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > size) callback(new StoreRefusal('IncompleteBody', 'The body is longer than its declared length'));
      else callback(null, chunk);
    },
  });
  return { transform, seen: () => seen };
}

/**
 * Files whose rows were deleted in a committed transaction: unlinked now, or by the next sweep.
 * Their garbage rows go in one transaction that does not wait for its WAL flush: should a crash
 * lose that, the sweep unlinks files already gone, which is harmless, and the request that freed
 * them (an overwrite, a delete) is not held up by one more disk flush.
 */
export async function dropGarbage(context: StoreContext, blobNames: string[]): Promise<void> {
  if (blobNames.length === 0) return;
  const removed: string[] = [];
  for (const blob of blobNames) {
    if (
      await context.blobs.remove(blob).then(
        () => true,
        () => false,
      )
    )
      removed.push(blob);
  }
  if (removed.length === 0) return;
  // One statement, its own transaction; synchronous_commit set for that transaction alone.
  await context.pool
    .query(
      `WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true))
       DELETE FROM store_garbage WHERE blob = ANY($1::text[]) AND EXISTS (SELECT 1 FROM lazy)`,
      [removed],
    )
    .catch(() => {});
}

/** In a transaction that deletes rows holding blobs: records the blobs as garbage. */
export async function markGarbage(tx: PoolClient, blobNames: string[]): Promise<void> {
  if (blobNames.length === 0) return;
  await tx.query('INSERT INTO store_garbage (blob) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [blobNames]);
}

/** Checks limits in a committing transaction, with what others hold (own reservation already released). */
export async function assertCommitFits(
  tx: PoolClient,
  locked: Locked,
  orgId: string,
  delta: { bytes: number; objects: number },
  excludeUpload: string | null = null,
): Promise<void> {
  // Read with the locks when the snapshot was taken for the same exclusion; asked otherwise.
  const held =
    locked.snapshot && locked.snapshot.excludeUpload === excludeUpload
      ? locked.snapshot.held
      : await reservedSpace(tx, orgId, locked.bucket.id, excludeUpload);
  assertWithinLimits(locked, held, delta);
}
