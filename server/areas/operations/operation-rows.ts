import { keysetPage } from '../../core/pagination.ts';
import { notFound } from '../../core/errors.ts';
import type { Queryable } from '../../db/pool.ts';
import { toOperationRef, type OperationRow } from '../../engine/operation-record.ts';

/** The organization's operation, or 404. */
export async function findOperation(db: Queryable, orgId: string, operationId: string): Promise<OperationRow> {
  const { rows } = await db.query<OperationRow>('SELECT * FROM operations WHERE org_id = $1 AND id = $2', [orgId, operationId]);
  if (!rows[0]) throw notFound(`No operation ${operationId} in this organization.`);
  return rows[0];
}

/** A page of the organization's operations, newest first, by resource type and state (null: any). */
export function operationsPage(
  db: Queryable,
  orgId: string,
  filters: { resource: string | null; state: string | null },
  query: { cursor?: string; limit?: number },
) {
  const list = {
    name: 'operations',
    from: `operations WHERE org_id = $1 AND ($2::text IS NULL OR resource_type = $2) AND ($3::text IS NULL OR state = $3)`,
    params: [orgId, filters.resource, filters.state],
    sortColumn: 'created_at',
    order: 'newest first',
  } as const;
  return keysetPage(db, list, query, toOperationRef);
}
