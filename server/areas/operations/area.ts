import { decodeCursor, DEFAULT_PAGE_SIZE, page, sortKeySql } from '../../core/pagination.ts';
import { performWrite } from '../../core/write.ts';
import type { Queryable } from '../../db/pool.ts';
import { conflict, notFound } from '../../core/errors.ts';
import { toOperationRef, type OperationRow } from '../../engine/operation-record.ts';
import type { OperationEngine } from '../../engine/engine.ts';
import type { Area, AreaDependencies } from '../area.ts';

/** Operations: the records of asynchronous work, listed, read, and cancelled while queued. */
/** `engine` cancels queued operations (cancelOperation). */
export function operationsArea({ pool }: AreaDependencies, engine: Pick<OperationEngine, 'cancelQueued'>): Area<'listOperations' | 'getOperation' | 'cancelOperation'> {
  const find = async (db: Queryable, orgId: string, operationId: string) => {
    const { rows } = await db.query<OperationRow>('SELECT * FROM operations WHERE org_id = $1 AND id = $2', [orgId, operationId]);
    if (!rows[0]) throw notFound(`No operation ${operationId} in this organization.`);
    return rows[0];
  };

  return {
    executors: {},
    handlers: {
      async listOperations(request, context) {
        const { resource = null, state = null } = request.query;
        const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
        const after = decodeCursor('operations', request.query.cursor);
        const { rows } = await pool.query<OperationRow & { sort_key: string }>(
          `SELECT *, ${sortKeySql('created_at')} AS sort_key FROM operations
           WHERE org_id = $1 AND ($2::text IS NULL OR resource_type = $2) AND ($3::text IS NULL OR state = $3)
             AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
           ORDER BY created_at DESC, id DESC LIMIT $6`,
          [context.principal.orgId, resource, state, after?.key ?? null, after?.id ?? '00000000-0000-0000-0000-000000000000', limit + 1],
        );
        return { status: 200, body: page('operations', rows, limit, (row) => ({ key: row.sort_key, id: row.id }), toOperationRef) };
      },

      async getOperation(request, context) {
        return { status: 200, body: toOperationRef(await find(pool, context.principal.orgId, request.path.operation_id)) };
      },

      async cancelOperation(request, context) {
        const orgId = context.principal.orgId;
        const operationId = request.path.operation_id;
        return performWrite(pool, context, async (tx) => {
          const cancelled = await engine.cancelQueued(tx, orgId, operationId);
          if (!cancelled) {
            const existing = await find(tx, orgId, operationId);
            throw conflict(
              'operation_not_cancellable',
              'Operation cannot be cancelled',
              `Operation ${operationId} is ${existing.state === 'running' || existing.attempt > 0 ? 'already started' : existing.state}; only a queued operation that has not started can be cancelled.`,
            );
          }
          const operation = toOperationRef(cancelled.operation);
          return {
            response: { status: 200 as const, body: operation },
            audit: { resourceId: operationId, after: { state: 'cancelled' }, operationId },
            afterCommit: cancelled.afterCommit,
          };
        });
      },
    },
  };
}
