// The store's limits are checked in two places: in TypeScript (quota.ts assertWithinLimits: a
// reservation, and the commits of conditional and multipart writes) and in the database
// (store_limits_refusal, migrations/1050_store_commit_put.sql: a plain PUT's commit, which goes
// with the organization's other plain PUTs in one statement, store_commit_puts of 1070). Both must refuse the same writes
// with the same reasons, which the S3 endpoint shows its clients.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Pool } from '../../../../server/db/pool.ts';
import { assertWithinLimits, type Held, type Locked } from '../../../../server/drivers/embedded/quota.ts';
import { storeDatabase } from './store-database.ts';

let pool: Pool;
beforeAll(async () => {
  pool = await storeDatabase();
}, 60_000);
afterAll(() => pool?.end());

interface Case {
  org: Locked['org'];
  bucket: { usage_bytes: number; usage_objects: number; max_size_bytes: number | null; max_objects: number | null };
  held: Held;
  delta: { bytes: number; objects: number };
}

/** What the TypeScript check says: null, or the reason of its refusal. */
function refusalInTypeScript({ org, bucket, held, delta }: Case): string | null {
  try {
    assertWithinLimits({ org, bucket: bucket as Locked['bucket'] }, held, delta);
    return null;
  } catch (error) {
    expect((error as { code?: string }).code).toBe('QuotaExceeded');
    return (error as Error).message;
  }
}

/** A deterministic spread of cases around every limit's edge (a linear congruential generator). */
function cases(count: number): Case[] {
  let state = 20261127;
  const pick = <T>(values: readonly T[]): T => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return values[Math.floor(state / 65536) % values.length]!;
  };
  const limits = [null, 0, 10, 100, 2 ** 53 - 1] as const;
  const amounts = [0, 1, 5, 10, 95, 100] as const;
  return Array.from({ length: count }, () => ({
    org: {
      usage_bytes: pick(amounts),
      usage_objects: pick(amounts),
      hard_bytes: pick(limits),
      max_objects: pick(limits),
      writes_suspended: pick([false, false, false, true]),
    },
    bucket: { usage_bytes: pick(amounts), usage_objects: pick(amounts), max_size_bytes: pick(limits), max_objects: pick(limits) },
    held: { orgBytes: pick([0, 3]), orgObjects: pick([0, 3]), bucketBytes: pick([0, 3]), bucketObjects: pick([0, 3]) },
    delta: { bytes: pick([-5, 0, 1, 5, 10]), objects: pick([-1, 0, 1]) },
  }));
}

describe('the limits of a write', () => {
  test('refuse the same writes, with the same reasons, in TypeScript and in the database', async () => {
    const spread = cases(2000);
    const { rows } = await pool.query<{ refusal: string | null }>(
      `SELECT store_limits_refusal(c->'org', c->'bucket', c->'held', (c->'delta'->>'bytes')::bigint, (c->'delta'->>'objects')::bigint) AS refusal
       FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS item (c, n) ORDER BY n`,
      [JSON.stringify(spread)],
    );
    const inDatabase = rows.map((row) => row.refusal);
    const inTypeScript = spread.map(refusalInTypeScript);
    // Every kind of answer is in the spread, so that each rule was compared.
    expect(new Set(inTypeScript.map((reason) => reason?.replace(/\(\d+( bytes)?\)/, '(n)') ?? 'fits'))).toEqual(
      new Set([
        'fits',
        'Object storage of this organization is suspended: new writes are refused',
        "The bucket's max_size_bytes (n) would be exceeded",
        "The bucket's max_objects (n) would be exceeded",
        "The organization's storage ceiling (n) is reached",
        "The organization's storage ceiling (n) would be exceeded",
        "The organization's object cap (n) would be exceeded",
      ]),
    );
    const differing = spread.flatMap((each, index) =>
      inDatabase[index] === inTypeScript[index] ? [] : [{ ...each, database: inDatabase[index], typescript: inTypeScript[index] }],
    );
    expect(differing).toEqual([]);
  });
});
