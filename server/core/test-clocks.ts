import type { Queryable } from '../db/pool.ts';
import type { Clock } from './clock.ts';

/**
 * Time as each organization sees it. Normally that is the platform's clock. With test clocks on
 * (`TEST_CLOCKS=true`, for tests and sandboxes, in the spirit of Stripe's test clocks) an operator
 * can move one organization's time forward (`npm run admin -- clock advance`): its metering, its
 * billing run, its scheduled restarts and the expiry of its console URLs then read the moved time,
 * so that a month closes or a restart comes due without waiting. The offset lives in the database,
 * so every process sharing it sees the same time; with test clocks off, offsets are ignored.
 */
export interface OrganizationClock {
  /** The platform's own clock. */
  readonly base: Clock;
  readonly testClocksEnabled: boolean;
  /** The organization's time now. */
  now(db: Queryable, orgId: string): Promise<Date>;
  /** The offset of every organization whose clock was moved (empty with test clocks off). */
  offsets(db: Queryable): Promise<Map<string, number>>;
  /** The organization's time given the offsets read by `offsets`. */
  nowWith(offsets: Map<string, number>, orgId: string): Date;
}

export function createOrganizationClock(base: Clock, testClocksEnabled: boolean): OrganizationClock {
  return {
    base,
    testClocksEnabled,
    async now(db, orgId) {
      if (!testClocksEnabled) return base.now();
      return new Date(base.now().getTime() + (await offsetOf(db, orgId)));
    },
    async offsets(db) {
      if (!testClocksEnabled) return new Map();
      const { rows } = await db.query<{ org_id: string; offset_ms: string }>('SELECT org_id, offset_ms::text FROM test_clocks');
      return new Map(rows.map((row) => [row.org_id, Number(row.offset_ms)]));
    },
    nowWith(offsets, orgId) {
      return new Date(base.now().getTime() + (offsets.get(orgId) ?? 0));
    },
  };
}

async function offsetOf(db: Queryable, orgId: string): Promise<number> {
  const { rows } = await db.query<{ offset_ms: string }>('SELECT offset_ms::text FROM test_clocks WHERE org_id = $1', [orgId]);
  return rows[0] ? Number(rows[0].offset_ms) : 0;
}

/** Moves the organization's clock forward by `byMs` (never back: what happened stays happened). */
export async function moveTestClock(db: Queryable, orgId: string, byMs: number): Promise<number> {
  if (!Number.isSafeInteger(byMs) || byMs <= 0) throw new RangeError('a test clock only moves forward');
  const { rows } = await db.query<{ offset_ms: string }>(
    `INSERT INTO test_clocks (org_id, offset_ms) VALUES ($1, $2)
     ON CONFLICT (org_id) DO UPDATE SET offset_ms = test_clocks.offset_ms + EXCLUDED.offset_ms, updated_at = now()
     RETURNING offset_ms::text`,
    [orgId, byMs],
  );
  return Number(rows[0]!.offset_ms);
}

/** `90s`, `15m`, `6h`, `32d` (or a plain number of milliseconds) as milliseconds; undefined when unreadable. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(match[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}
