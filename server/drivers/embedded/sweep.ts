import { withTransaction } from '../../db/pool.ts';
import type { StoreContext } from './write-path.ts';

/** A temporary file without a reservation is left alone this long (its reservation may be committing). */
const ORPHAN_TEMPORARY_MS = 10 * 60_000;

/** How long a completed upload is remembered, for a client repeating CompleteMultipartUpload. */
const COMPLETED_UPLOAD_MEMORY = '1 day';

/** Abandoned multipart uploads aborted per transaction (a backlog goes in several). */
const ABANDONED_UPLOADS_PER_BATCH = 100;

/**
 * Moves the egress log's rows into each organization's running figure, in one transaction (a
 * reader, which adds the two, sees the bytes in one place or the other). Several processes may
 * fold at once: each row is deleted, so counted, by one of them.
 */
async function foldEgress({ pool }: StoreContext): Promise<void> {
  await pool.query(
    `WITH folded AS (DELETE FROM store_egress RETURNING org_id, bytes)
     INSERT INTO store_orgs (org_id, egress_bytes) SELECT org_id, sum(bytes) FROM folded GROUP BY org_id
     ON CONFLICT (org_id) DO UPDATE SET egress_bytes = store_orgs.egress_bytes + EXCLUDED.egress_bytes`,
  );
}

/**
 * Gives back what interrupted writes left: reservations of processes that are gone (their
 * advisory lock is free) with their files, files whose rows were deleted, and temporary files
 * no reservation knows; folds the egress log; and aborts multipart uploads begun more than
 * `uploadRetentionMs` ago and never completed nor aborted (S3's AbortIncompleteMultipartUpload),
 * whose parts would otherwise hold space for ever; and forgets uploads completed a day ago. Run at start (a crashed process's uploads
 * leave nothing behind) and on a schedule (OBJECT_STORE_SWEEP_INTERVAL_MS).
 */
export async function sweep(context: StoreContext, namespace: number, uploadRetentionMs: number): Promise<void> {
  const { pool, blobs, instance } = context;
  for (;;) {
    const aborted = await withTransaction(pool, async (tx) => {
      // SKIP LOCKED: an upload being completed right now (its row locked) is left to finish.
      const { rows: uploads } = await tx.query<{ upload_id: string }>(
        `SELECT upload_id FROM store_uploads WHERE initiated < now() - make_interval(secs => $1::double precision / 1000)
         ORDER BY initiated LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [uploadRetentionMs, ABANDONED_UPLOADS_PER_BATCH],
      );
      const ids = uploads.map((row) => row.upload_id);
      if (ids.length === 0) return 0;
      // The parts' files become garbage (removed below); their space stops counting with their rows.
      await tx.query(
        `INSERT INTO store_garbage (blob) SELECT blob FROM store_parts WHERE upload_id = ANY($1::text[]) ON CONFLICT DO NOTHING`,
        [ids],
      );
      await tx.query('DELETE FROM store_uploads WHERE upload_id = ANY($1::text[])', [ids]);
      return ids.length;
    });
    if (aborted < ABANDONED_UPLOADS_PER_BATCH) break;
  }
  const { rows: instances } = await pool.query<{ instance: number }>(
    'SELECT DISTINCT instance FROM store_reservations WHERE instance <> $1',
    [instance],
  );
  for (const { instance: other } of instances) {
    await withTransaction(pool, async (tx) => {
      // Free only when that process (and its connection) is gone; released at the end of this transaction.
      const { rows } = await tx.query<{ free: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2) AS free', [namespace, other]);
      if (!rows[0]!.free) return;
      const deleted = await tx.query<{ blob: string }>('DELETE FROM store_reservations WHERE instance = $1 RETURNING blob', [other]);
      await tx.query('INSERT INTO store_garbage (blob) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [
        deleted.rows.map((row) => row.blob),
      ]);
    });
  }
  await foldEgress(context);
  await pool.query(`DELETE FROM store_completed_uploads WHERE completed_at < now() - interval '${COMPLETED_UPLOAD_MEMORY}'`);
  const { rows: garbage } = await pool.query<{ blob: string }>('SELECT blob FROM store_garbage');
  for (const { blob } of garbage) {
    await blobs.remove(blob);
    await pool.query('DELETE FROM store_garbage WHERE blob = $1', [blob]);
  }
  for (const name of await blobs.staleTemporaries(ORPHAN_TEMPORARY_MS)) {
    const { rows } = await pool.query('SELECT 1 FROM store_reservations WHERE blob = $1', [name]);
    if (rows.length === 0) await blobs.remove(name);
  }
}
