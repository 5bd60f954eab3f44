import { isInteger, isSafeNumber, parse } from 'lossless-json';
import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

const INT8_OID = 20;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// `bigint` columns arrive as exact numbers: a number when it fits, a bigint beyond 2^53 (the
// spend budget reaches 2^63-1). Numeric and timestamp parsing keep pg's defaults.
pg.types.setTypeParser(INT8_OID, (text: string) => {
  const value = BigInt(text);
  return value > MAX_SAFE || value < -MAX_SAFE ? value : Number(value);
});

// JSON columns (audit snapshots) keep big integers exact too.
const JSON_OID = 114;
const JSONB_OID = 3802;
const parseExactJson = (text: string): unknown =>
  parse(text, undefined, (digits) => (isInteger(digits) && !isSafeNumber(digits) ? BigInt(digits) : Number(digits)));
pg.types.setTypeParser(JSON_OID, parseExactJson);
pg.types.setTypeParser(JSONB_OID, parseExactJson);

export function createPool(connectionString: string, max = 10): Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: 'cloud-platform-api' });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  return pool;
}

/** Runs `work` in one transaction: committed when it returns, rolled back when it throws. */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
