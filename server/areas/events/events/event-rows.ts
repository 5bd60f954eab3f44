import type { components } from '../../../../generated/openapi.ts';
import { iso } from '../../../core/clock.ts';
import { notFound } from '../../../core/errors.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Queryable } from '../../../db/pool.ts';

export type EventOut = components['schemas']['EventOut'];

/** A row of events (written by core/events.ts and the trigger on vms, migration 1000). */
export interface EventRow {
  id: string;
  org_id: string;
  type: EventOut['type'];
  resource_type: EventOut['resource_type'];
  resource_id: string;
  data: Record<string, unknown>;
  created_at: Date;
}

export const toEventOut = (row: EventRow): EventOut => ({
  id: row.id,
  type: row.type,
  created_at: iso(row.created_at),
  resource_type: row.resource_type,
  resource_id: row.resource_id,
  data: row.data,
});

/** The filters of listEvents; null: any. `since` is inclusive, `until` exclusive. */
export interface EventFilters {
  type: string | null;
  resourceType: string | null;
  resourceId: string | null;
  since: string | null;
  until: string | null;
}

/** A page of the organization's events, newest first, filtered. */
export function eventsPage(db: Queryable, orgId: string, filters: EventFilters, query: { cursor?: string; limit?: number }) {
  const list = {
    name: 'events',
    from: `events WHERE org_id = $1
             AND ($2::text IS NULL OR type = $2) AND ($3::text IS NULL OR resource_type = $3) AND ($4::text IS NULL OR resource_id = $4)
             AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at < $6)`,
    params: [orgId, filters.type, filters.resourceType, filters.resourceId, filters.since, filters.until],
    sortColumn: 'created_at',
    order: 'newest first',
    idKind: 'text',
  } as const;
  return keysetPage(db, list, query, toEventOut);
}

export async function findEvent(db: Queryable, orgId: string, eventId: string): Promise<EventRow> {
  const { rows } = await db.query<EventRow>('SELECT * FROM events WHERE org_id = $1 AND id = $2', [orgId, eventId]);
  if (!rows[0]) throw notFound(`No event ${eventId} in this organization.`);
  return rows[0];
}

/** Deletes events older than `before` (their deliveries with them), a batch at a time; how many went. */
export async function purgeEventsBefore(db: Queryable, before: Date, batch: number): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < $1 LIMIT $2)`, [
    before,
    batch,
  ]);
  return rowCount ?? 0;
}
