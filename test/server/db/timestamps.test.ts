// Timestamps come out of PostgreSQL as the instants they are, whatever the session's time zone
// and however many digits of fraction they have: the server reads them by position
// (server/db/timestamps.ts) and must agree with PostgreSQL's own arithmetic, to the millisecond.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPool, type Pool } from '../../../server/db/pool.ts';
import { timestamptzInput } from '../../../server/db/timestamps.ts';
import { createTestDatabase } from '../../support/server.ts';

let pool: Pool;
beforeAll(async () => {
  pool = createPool(await createTestDatabase(), 2);
});
afterAll(() => pool?.end());

const INSTANTS = [
  '2026-11-24 01:35:15.123456+00',
  '2026-11-24 01:35:15+00',
  '2026-11-24 01:35:15.1+00',
  '2026-11-24 01:35:15.58+00',
  '2026-11-24 01:35:15.581+00',
  '2026-11-24 01:35:15.999999+00',
  '2024-02-29 23:59:59.9995+00',
  '1969-12-31 23:59:59.9995+00',
  '1900-01-01 00:00:00+00',
  '1000-06-15 12:00:00.5+00',
  '0099-03-01 00:00:00+00',
  '0044-03-15 12:00:00+00 BC',
  '12026-01-01 00:00:00+00',
];

describe.each(['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Asia/Kathmandu', 'America/Los_Angeles', 'Europe/Amsterdam'])(
  'in a session whose time zone is %s',
  (timeZone) => {
    test.each(INSTANTS)('%s is read as the instant PostgreSQL holds', async (instant) => {
      const client = await pool.connect();
      try {
        await client.query(`SET TimeZone = '${timeZone}'`);
        const { rows } = await client.query<{ read: Date; text: string; ms: string }>(
          `SELECT $1::timestamptz AS read, $1::timestamptz::text AS text,
                  floor(extract(epoch FROM $1::timestamptz) * 1000)::bigint::text AS ms`,
          [instant],
        );
        const [{ read, text, ms }] = rows as [{ read: Date; text: string; ms: string }];
        expect(read, `PostgreSQL wrote ${text}`).toBeInstanceOf(Date);
        expect(read.getTime(), `PostgreSQL wrote ${text}`).toBe(Number(ms));
      } finally {
        await client.query('RESET TimeZone');
        client.release();
      }
    });
  },
);

test('infinity stays infinite', async () => {
  const { rows } = await pool.query<{ future: unknown; past: unknown }>(
    `SELECT 'infinity'::timestamptz AS future, '-infinity'::timestamptz AS past`,
  );
  expect(rows[0]).toEqual({ future: Number.POSITIVE_INFINITY, past: Number.NEGATIVE_INFINITY });
});

test("an RFC 3339 date-time of year 0000 goes in as the year before 1, PostgreSQL's 1 BC, to the microsecond", async () => {
  for (const [dateTime, firstOfYearOneMinus] of [
    ['0000-12-31T23:59:59.999999Z', '1 microsecond'],
    ['0000-01-01T00:00:00Z', '366 days'], // year 0 is a leap year
    ['0000-12-31T23:00:00-01:00', '0'],
    ['0001-01-01T00:00:00Z', '0'],
  ] as const) {
    const { rows } = await pool.query<{ same: boolean }>(
      `SELECT $1::timestamptz = '0001-01-01T00:00:00Z'::timestamptz - $2::interval AS same`,
      [timestamptzInput(dateTime), firstOfYearOneMinus],
    );
    expect(rows[0]!.same, dateTime).toBe(true);
  }
});
