import { withTransaction } from '../../db/pool.ts';
import type { StoreContext } from './write-path.ts';

/** A temporary file without a reservation is left alone this long (its reservation may be committing). */
const ORPHAN_TEMPORARY_MS = 10 * 60_000;

/**
 * Gives back what interrupted writes left: reservations of processes that are gone (their
 * advisory lock is free) with their files, files whose rows were deleted, and temporary files
 * no reservation knows. Run at start (a crashed process's uploads leave nothing behind) and by
 * the reconciler's schedule.
 */
export async function sweep(context: StoreContext, namespace: number): Promise<void> {
  const { pool, blobs, instance } = context;
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
