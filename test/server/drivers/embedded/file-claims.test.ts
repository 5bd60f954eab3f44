// A small write's claim of its file (server/drivers/embedded/file-claims.ts): claims arriving
// together go in one statement, and each is still answered for itself: inserted when its bucket is
// served and the organization's, refused (no row) otherwise, whatever the others of its run.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Pool } from '../../../../server/db/pool.ts';
import { fileClaims, type FileClaim } from '../../../../server/drivers/embedded/file-claims.ts';
import { storeDatabase } from './store-database.ts';

let pool: Pool;
beforeAll(async () => {
  pool = await storeDatabase();
}, 60_000);
afterAll(() => pool?.end());

async function bucket(org: string, suspended = false): Promise<string> {
  const id = randomUUID();
  await pool.query('INSERT INTO store_buckets (id, org_id, name, versioning, suspended) VALUES ($1, $2, $3, false, $4)', [
    id,
    org,
    `b-${id}`,
    suspended,
  ]);
  return id;
}

test('claims made together are each inserted or refused for themselves, with their own file and process', async () => {
  const org = randomUUID();
  const other = randomUUID();
  await pool.query('INSERT INTO store_orgs (org_id) VALUES ($1), ($2)', [org, other]);
  const served = await bucket(org);
  const suspended = await bucket(org, true);
  const othersBucket = await bucket(other);
  const claim = (bucketId: string, instance: number): FileClaim => ({
    id: randomUUID(),
    blob: randomUUID(),
    instance,
    bucketId,
    orgId: org,
  });
  const claims = [
    claim(served, 1),
    claim(suspended, 1),
    claim(served, 2),
    claim(othersBucket, 1),
    claim(randomUUID(), 1),
    ...Array.from({ length: 40 }, (_, index) => claim(served, index)),
  ];

  const answers = await Promise.all(claims.map((c) => fileClaims(pool)(c)));

  const expected = claims.map((c) => c.bucketId === served);
  expect(answers).toEqual(expected);
  const { rows } = await pool.query<{ id: string; blob: string; instance: number; bucket_id: string; bytes: number; objects: number }>(
    'SELECT id, blob, instance, bucket_id, bytes, objects FROM store_reservations WHERE id = ANY ($1::uuid[]) ORDER BY id',
    [claims.map((c) => c.id)],
  );
  const inserted = claims
    .filter((c) => c.bucketId === served)
    .map((c) => ({ id: c.id, blob: c.blob, instance: c.instance, bucket_id: served, bytes: 0, objects: 0 }))
    .sort((a, b) => a.id.localeCompare(b.id));
  expect(rows).toEqual(inserted);
});

test('a run that fails fails its own claims; the next claims are made', async () => {
  const org = randomUUID();
  await pool.query('INSERT INTO store_orgs (org_id) VALUES ($1)', [org]);
  const served = await bucket(org);
  const id = randomUUID();
  // The same id twice in one run: the run's statement fails as a whole, and neither row is kept.
  const twice = await Promise.allSettled([0, 1].map(() => fileClaims(pool)({ id, blob: 'x', instance: 1, bucketId: served, orgId: org })));
  expect(twice.map((outcome) => outcome.status)).toContain('rejected');
  const after = await fileClaims(pool)({ id: randomUUID(), blob: 'y', instance: 1, bucketId: served, orgId: org });
  expect(after).toBe(true);
});
