import { randomUUID } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import { notFound } from '../../../core/errors.ts';
import { keysetPage } from '../../../core/pagination.ts';
import type { Queryable } from '../../../db/pool.ts';

export type WebhookEndpointOut = components['schemas']['WebhookEndpointOut'];

/** A row of webhook_endpoints (migration 1000). */
export interface EndpointRow {
  id: string;
  org_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  disabled_reason: WebhookEndpointOut['disabled_reason'];
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export function toWebhookEndpointOut(row: EndpointRow): WebhookEndpointOut {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    failing_since: isoOrNull(row.failing_since),
    // A rotation's previous secret is shown only while it still signs.
    previous_secret_expires_at:
      row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > Date.now() ? iso(row.previous_secret_expires_at) : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The organization's endpoint, or 404; `lock`: held until the transaction ends. */
export async function findEndpoint(db: Queryable, orgId: string, endpointId: string, lock = false): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT * FROM webhook_endpoints WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
    [orgId, endpointId],
  );
  if (!rows[0]) throw notFound(`No webhook endpoint ${endpointId} in this organization.`);
  return rows[0];
}

export async function insertEndpoint(
  db: Queryable,
  endpoint: { orgId: string; url: string; description: string | null; eventTypes: string[]; enabled: boolean; secretSealed: string },
): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, org_id, url, description, event_types, enabled, disabled_reason, secret_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6 THEN NULL ELSE 'disabled_by_user' END, $7) RETURNING *`,
    [randomUUID(), endpoint.orgId, endpoint.url, endpoint.description, endpoint.eventTypes, endpoint.enabled, endpoint.secretSealed],
  );
  return rows[0]!;
}

/** How many endpoints the organization has, its row locked so that two creations count in turn. */
export async function countEndpointsLocked(db: Queryable, orgId: string): Promise<number> {
  await db.query('SELECT id FROM orgs WHERE id = $1 FOR UPDATE', [orgId]);
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1', [orgId]);
  return rows[0]!.n;
}

export interface EndpointChanges {
  url?: string;
  description?: string | null;
  eventTypes?: string[];
  enabled?: boolean;
}

export async function updateEndpoint(db: Queryable, endpointId: string, changes: EndpointChanges): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       url = COALESCE($2, url),
       description = CASE WHEN $3 THEN $4 ELSE description END,
       event_types = COALESCE($5, event_types),
       enabled = COALESCE($6, enabled),
       disabled_reason = CASE WHEN $6 IS NULL THEN disabled_reason WHEN $6 THEN NULL ELSE 'disabled_by_user' END,
       failing_since = CASE WHEN $6 AND NOT enabled THEN NULL ELSE failing_since END,
       updated_at = now()
     WHERE id = $1 RETURNING *`,
    [
      endpointId,
      changes.url ?? null,
      changes.description !== undefined,
      changes.description ?? null,
      changes.eventTypes ?? null,
      changes.enabled ?? null,
    ],
  );
  return rows[0]!;
}

/** A new secret; the current one keeps signing until `previousValidUntil`. */
export async function rotateSecret(
  db: Queryable,
  endpointId: string,
  secretSealed: string,
  previousValidUntil: Date,
): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, previous_secret_expires_at = $3,
       secret_sealed = $2, updated_at = now()
     WHERE id = $1 RETURNING *`,
    [endpointId, secretSealed, previousValidUntil],
  );
  return rows[0]!;
}

export async function deleteEndpoint(db: Queryable, orgId: string, endpointId: string): Promise<void> {
  const { rowCount } = await db.query('DELETE FROM webhook_endpoints WHERE org_id = $1 AND id = $2', [orgId, endpointId]);
  if (rowCount === 0) throw notFound(`No webhook endpoint ${endpointId} in this organization.`);
}

export function endpointsPage(db: Queryable, orgId: string, query: { cursor?: string; limit?: number }) {
  const list = {
    name: 'webhook-endpoints',
    from: 'webhook_endpoints WHERE org_id = $1',
    params: [orgId],
    sortColumn: 'created_at',
    order: 'newest first',
  } as const;
  return keysetPage(db, list, query, toWebhookEndpointOut);
}
