import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/pool.ts';
import { columnsOf, prepared, runPrepared } from '../db/statements.ts';
import type { components } from '../../generated/openapi.ts';
import { iso, isoOrNull } from '../core/clock.ts';
import { recordEvents, type NewEvent } from '../core/events.ts';

export type OperationRef = components['schemas']['OperationRef'];
export type OperationType = OperationRef['type'];
export type ResourceType = OperationRef['resource_type'];

/** A row of the operations table. */
export interface OperationRow {
  id: string;
  org_id: string;
  type: OperationType;
  resource_type: ResourceType;
  resource_id: string;
  state: OperationRef['state'];
  attempt: number;
  max_attempts: number;
  payload: Record<string, unknown>;
  result: Record<string, unknown> | null;
  created_at: Date;
  /** The order of acceptance: operations on one resource run one at a time, in this order. */
  seq: number;
  started_at: Date | null;
  finished_at: Date | null;
  error_class: OperationRef['error_class'] | null;
  error_detail: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
}

/** Every column of a row of operations, for the prepared statements that return one. */
const OPERATION_FIELDS = {
  id: true,
  org_id: true,
  type: true,
  resource_type: true,
  resource_id: true,
  state: true,
  attempt: true,
  max_attempts: true,
  payload: true,
  result: true,
  created_at: true,
  seq: true,
  started_at: true,
  finished_at: true,
  error_class: true,
  error_detail: true,
  lease_owner: true,
  lease_expires_at: true,
} as const;

export const OPERATION_COLUMNS = columnsOf<OperationRow>(OPERATION_FIELDS);

/** An operation as the contract shows it. */
export function toOperationRef(row: OperationRow): OperationRef {
  return {
    id: row.id,
    type: row.type,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    state: row.state,
    attempt: row.attempt,
    max_attempts: row.max_attempts,
    created_at: iso(row.created_at),
    finished_at: isoOrNull(row.finished_at),
    error_class: row.error_class ?? null,
    error_detail: row.error_detail,
  };
}

export interface NewOperation {
  orgId: string;
  type: OperationType;
  resourceType: ResourceType;
  resourceId: string;
  payload?: Record<string, unknown>;
  maxAttempts: number;
}

/** The channel on which queued work is announced to the workers of every process. */
export const OPERATIONS_CHANNEL = 'operations_queued';

/** The statement of `enqueueOperation`. */
const ENQUEUE = prepared(
  'operation_enqueue',
  `WITH queued AS (
     INSERT INTO operations (id, org_id, type, resource_type, resource_id, state, attempt, max_attempts, payload)
     SELECT $1, $2, $3, $4, $5, 'queued', 0, $6, $7
     FROM (SELECT pg_advisory_xact_lock(hashtextextended($8, 0)) OFFSET 0) AS resource_lock
     RETURNING ${OPERATION_COLUMNS})
   SELECT ${columnsOf<OperationRow>(OPERATION_FIELDS, 'queued')} FROM queued, pg_notify($9, '')`,
);

/**
 * Queues an operation: part of the transaction of the change that needs it, and the one door
 * through which work is queued. The operations of one resource take their place in line (`seq`)
 * one transaction at a time, until commit: an operation never becomes visible behind a later one
 * of the same resource. The workers are woken when the transaction commits (NOTIFY is delivered
 * at commit, and not at all on rollback). The announcement says only that work is queued: the
 * same one, made by every operation a transaction queues (a group of creations, core/write-groups.ts),
 * is delivered once.
 */
export async function enqueueOperation(db: Queryable, operation: NewOperation): Promise<OperationRow> {
  // One statement, in this order: the resource's lock (the subquery runs first, and OFFSET 0 keeps
  // it a subquery of its own), the row with its `seq`, then the announcement.
  const { rows } = await runPrepared<OperationRow>(db, ENQUEUE, [
    randomUUID(),
    operation.orgId,
    operation.type,
    operation.resourceType,
    operation.resourceId,
    operation.maxAttempts,
    JSON.stringify(operation.payload ?? {}),
    `operations:${operation.orgId}:${operation.resourceType}:${operation.resourceId}`,
    OPERATIONS_CHANNEL,
  ]);
  return rows[0]!;
}

/**
 * Records work that completed synchronously: an operation returned already `succeeded`, with
 * `finished_at` set, and its end announced.
 */
export async function recordFinishedOperation(db: Queryable, operation: NewOperation): Promise<OperationRow> {
  const row = await insertOperation(db, operation, 'succeeded');
  await recordEvents(db, operationEndEvents([row]));
  return row;
}

const END_EVENTS = { succeeded: 'operation.succeeded', failed: 'operation.failed', cancelled: 'operation.cancelled' } as const;

/** The events announcing these operations' ends (none for an operation not ended). */
export function operationEndEvents(rows: readonly OperationRow[]): NewEvent[] {
  return rows.flatMap((row): NewEvent[] =>
    !(row.state in END_EVENTS)
      ? []
      : [
          {
            orgId: row.org_id,
            type: END_EVENTS[row.state as keyof typeof END_EVENTS],
            resourceId: row.id,
            data: { operation: toOperationRef(row) },
          },
        ],
  );
}

/** A new operation row: queued, or already succeeded (one attempt, started and finished now). */
async function insertOperation(db: Queryable, operation: NewOperation, state: 'queued' | 'succeeded'): Promise<OperationRow> {
  const { rows } = await db.query<OperationRow>(
    `INSERT INTO operations (id, org_id, type, resource_type, resource_id, state, attempt, max_attempts, payload, started_at, finished_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $6 = 'succeeded' THEN now() END, CASE WHEN $6 = 'succeeded' THEN now() END)
     RETURNING *`,
    [
      randomUUID(),
      operation.orgId,
      operation.type,
      operation.resourceType,
      operation.resourceId,
      state,
      state === 'succeeded' ? 1 : 0,
      operation.maxAttempts,
      JSON.stringify(operation.payload ?? {}),
    ],
  );
  return rows[0]!;
}

/** The latest operation on a resource that is still in flight, if any. */
export async function inFlightOperation(
  db: Queryable,
  orgId: string,
  resourceType: ResourceType,
  resourceId: string,
): Promise<OperationRow | undefined> {
  const { rows } = await db.query<OperationRow>(
    `SELECT * FROM operations WHERE org_id = $1 AND resource_type = $2 AND resource_id = $3 AND finished_at IS NULL
     ORDER BY seq DESC LIMIT 1`,
    [orgId, resourceType, resourceId],
  );
  return rows[0];
}
