// store_commit_puts (migrations/1070_store_commit_puts_per_run.sql) commits a run of plain PUTs
// of one organization in one statement: it locks and sums once for the run and moves the usage
// once at its end, so every item's limits are checked against what the items before it left,
// counted in the function. Each item still commits or is refused alone, and the usage it leaves
// is that of the versions stored.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Pool } from '../../../../server/db/pool.ts';
import { storeDatabase } from './store-database.ts';

let pool: Pool;
beforeAll(async () => {
  pool = await storeDatabase();
}, 60_000);
afterAll(() => pool?.end());

type Outcome = { committed: { version: { key: string; size_bytes: number } } } | { code: string; message: string };

async function organization(limits: { hardBytes?: number; maxObjects?: number } = {}): Promise<string> {
  const org = randomUUID();
  await pool.query('INSERT INTO store_orgs (org_id, hard_bytes, max_objects) VALUES ($1, $2, $3)', [
    org,
    limits.hardBytes ?? null,
    limits.maxObjects ?? null,
  ]);
  return org;
}

async function bucket(org: string, name: string, limits: { maxObjects?: number; maxSizeBytes?: number } = {}): Promise<string> {
  const id = randomUUID();
  await pool.query(
    'INSERT INTO store_buckets (id, org_id, name, versioning, max_objects, max_size_bytes) VALUES ($1, $2, $3, false, $4, $5)',
    [id, org, name, limits.maxObjects ?? null, limits.maxSizeBytes ?? null],
  );
  return id;
}

/** A write's reservation (a claim holds nothing; a reserved write holds its bytes). */
async function reservation(org: string, bucketId: string, bytes = 0, objects = 0): Promise<string> {
  const id = randomUUID();
  await pool.query(
    'INSERT INTO store_reservations (id, org_id, bucket_id, bytes, objects, blob, instance) VALUES ($1, $2, $3, $4, $5, $6, 0)',
    [id, org, bucketId, bytes, objects, `blob-${id}`],
  );
  return id;
}

const put = (bucketId: string, key: string, release: string, size: number) => ({
  bucket_id: bucketId,
  key,
  release,
  version: {
    version_id: randomUUID(),
    size_bytes: size,
    etag: `"${key}"`,
    content_type: null,
    headers: {},
    checksums: {},
    segments: [{ blob: `blob-${release}`, size }],
    tags: [],
    encryption: null,
    acl: null,
  },
});

async function commit(org: string, items: ReturnType<typeof put>[]): Promise<string[]> {
  const { rows } = await pool.query<{ outcomes: Outcome[] }>('SELECT store_commit_puts($1, $2) AS outcomes', [org, JSON.stringify(items)]);
  return rows[0]!.outcomes.map((outcome) =>
    'code' in outcome ? `${outcome.code} ${outcome.message}` : `stored ${outcome.committed.version.key}`,
  );
}

/** The usage the rows say, next to what the versions stored add up to. */
async function usage(org: string) {
  const { rows } = await pool.query<{ name: string; recorded: string; stored: string }>(
    `SELECT b.name, b.usage_bytes || ' bytes, ' || b.usage_objects || ' objects' AS recorded,
            coalesce(sum(v.size_bytes), 0) || ' bytes, ' || count(v.key) || ' objects' AS stored
     FROM store_buckets b LEFT JOIN store_versions v ON v.bucket_id = b.id WHERE b.org_id = $1 GROUP BY b.id ORDER BY b.name`,
    [org],
  );
  const { rows: orgRows } = await pool.query<{ recorded: string }>(
    `SELECT usage_bytes || ' bytes, ' || usage_objects || ' objects' AS recorded FROM store_orgs WHERE org_id = $1`,
    [org],
  );
  return { org: orgRows[0]!.recorded, buckets: rows };
}

describe('a run of plain PUTs', () => {
  test("checks each one's limits against the ones before it, refusing alone, and leaves the usage of what it stored", async () => {
    const org = await organization({ hardBytes: 1_000 });
    const photos = await bucket(org, 'photos', { maxObjects: 2 });
    const logs = await bucket(org, 'logs');
    // Another write in flight holds 300 bytes of the organization's ceiling.
    await reservation(org, logs, 300, 1);
    const items = [
      put(photos, 'a.jpg', await reservation(org, photos), 100),
      put(logs, 'today.log', await reservation(org, logs), 200),
      put(photos, 'b.jpg', await reservation(org, photos), 100),
      // The bucket's third object: refused, and the ones after it still go.
      put(photos, 'c.jpg', await reservation(org, photos), 10),
      // A replacement in the run: no new object, 50 more bytes.
      put(photos, 'a.jpg', await reservation(org, photos), 150),
      // A reserved write releasing its 250 bytes as it commits: they are not counted twice.
      put(logs, 'big.log', await reservation(org, logs, 250, 1), 250),
      // 100 + 200 + 150 + 250 stored and 300 held: 1 more byte would pass 1,000.
      put(logs, 'one-more.log', await reservation(org, logs), 1),
      // A swept reservation, and a bucket that is not there.
      put(logs, 'swept.log', randomUUID(), 5),
      put(randomUUID(), 'nowhere.txt', await reservation(org, logs), 5),
    ];
    expect(await commit(org, items)).toEqual([
      'stored a.jpg',
      'stored today.log',
      'stored b.jpg',
      "CPQ01 The bucket's max_objects (2) would be exceeded",
      'stored a.jpg',
      'stored big.log',
      "CPQ01 The organization's storage ceiling (1000 bytes) would be exceeded",
      'CPS01 the reservation of this write was swept: its blob is garbage',
      'CPB01 The specified bucket does not exist',
    ]);
    expect(await usage(org)).toEqual({
      org: '700 bytes, 4 objects',
      buckets: [
        { name: 'logs', recorded: '450 bytes, 2 objects', stored: '450 bytes, 2 objects' },
        { name: 'photos', recorded: '250 bytes, 2 objects', stored: '250 bytes, 2 objects' },
      ],
    });
    // The refused items' reservations stay for their writes to release; the committed ones' are gone.
    const { rows } = await pool.query<{ count: string }>('SELECT count(*) FROM store_reservations WHERE org_id = $1', [org]);
    expect(Number(rows[0]!.count)).toBe(1 + 3);
  });

  test("counts the space other writes hold in a bucket against that bucket's limits", async () => {
    const org = await organization();
    const photos = await bucket(org, 'photos', { maxSizeBytes: 1_000 });
    const logs = await bucket(org, 'logs', { maxObjects: 2 });
    // Writes in flight: one holds 900 bytes of photos, another one object of logs.
    await reservation(org, photos, 900, 0);
    await reservation(org, logs, 0, 1);
    expect(
      await commit(org, [
        put(photos, 'a.jpg', await reservation(org, photos), 100),
        put(photos, 'b.jpg', await reservation(org, photos), 1),
        put(logs, 'a.log', await reservation(org, logs), 100),
        put(logs, 'b.log', await reservation(org, logs), 100),
      ]),
    ).toEqual([
      'stored a.jpg',
      "CPQ01 The bucket's max_size_bytes (1000) would be exceeded",
      'stored a.log',
      "CPQ01 The bucket's max_objects (2) would be exceeded",
    ]);
  });

  test('of an organization that is not there is refused item by item', async () => {
    const org = randomUUID();
    expect(await commit(org, [put(randomUUID(), 'x', randomUUID(), 1)])).toEqual(['CPB01 The specified bucket does not exist']);
  });
});
