import { randomUUID } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import { notFound } from '../../../core/errors.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Queryable } from '../../../db/pool.ts';

export type WebhookDeliveryOut = components['schemas']['WebhookDeliveryOut'];
export type DeliveryAttempt = components['schemas']['WebhookDeliveryAttempt'];

/** A row of webhook_deliveries (migration 1000), with its event's type. */
export interface DeliveryRow {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: WebhookDeliveryOut['status'];
  attempts: DeliveryAttempt[];
  attempt_count: number;
  next_attempt_at: Date | null;
  in_flight: boolean;
  created_at: Date;
  finished_at: Date | null;
}

const DELIVERY_COLUMNS = `d.id, d.org_id, d.endpoint_id, d.event_id, e.type AS event_type, d.status, d.attempts, d.attempt_count,
  d.next_attempt_at, d.in_flight, d.created_at, d.finished_at`;

export const toWebhookDeliveryOut = (row: DeliveryRow): WebhookDeliveryOut => ({
  id: row.id,
  endpoint_id: row.endpoint_id,
  event_id: row.event_id,
  event_type: row.event_type,
  status: row.status,
  attempts: row.attempts,
  next_attempt_at: isoOrNull(row.next_attempt_at),
  created_at: iso(row.created_at),
  finished_at: isoOrNull(row.finished_at),
});

/** A new delivery of the event to the endpoint, due now (the fan-out trigger writes the others). */
export async function insertDelivery(db: Queryable, orgId: string, endpointId: string, eventId: string): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH d AS (
       INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, next_attempt_at) VALUES ($1, $2, $3, $4, now()) RETURNING *)
     SELECT ${DELIVERY_COLUMNS} FROM d JOIN events e ON e.id = d.event_id`,
    [randomUUID(), orgId, endpointId, eventId],
  );
  await db.query(`SELECT pg_notify('webhook_deliveries_due', '')`);
  return rows[0]!;
}

export async function findDelivery(db: Queryable, orgId: string, endpointId: string, deliveryId: string): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
     WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.id = $3`,
    [orgId, endpointId, deliveryId],
  );
  if (!rows[0]) throw notFound(`No delivery ${deliveryId} of webhook endpoint ${endpointId}.`);
  return rows[0];
}

/** A page of the endpoint's deliveries, newest first, by status and event (null: any). */
export function deliveriesPage(
  db: Queryable,
  endpointId: string,
  filters: { status: string | null; eventId: string | null },
  query: { cursor?: string; limit?: number },
) {
  const list = {
    name: 'webhook-deliveries',
    from: `(SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
            WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::text IS NULL OR d.event_id = $3)) deliveries
           WHERE true`,
    params: [endpointId, filters.status, filters.eventId],
    sortColumn: 'created_at',
    order: 'newest first',
  } as const;
  return keysetPage(db, list, query, toWebhookDeliveryOut);
}
