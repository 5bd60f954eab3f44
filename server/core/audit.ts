import { randomUUID } from 'node:crypto';
// Snapshots are JSON with exact integers: the spend budget's 2^63-1 stays exact.
import { stringify } from 'lossless-json';
import type { QueryConfig } from 'pg';
import type { Queryable } from '../db/pool.ts';
import type { components } from '../../generated/openapi.ts';
import { eventsInsert, eventsValues, type NewEvent } from './events.ts';
import type { Actor } from './principal.ts';

export type AuditResourceType = components['schemas']['AuditEventOut']['resource_type'];

/** What a change did, as its audit event records it. */
export interface AuditEntry {
  action: string;
  resourceType: AuditResourceType;
  resourceId?: string | null;
  before?: object | null;
  after?: object | null;
  operationId?: string | null;
}

export interface AuditRecord extends AuditEntry {
  orgId: string;
  actor: Actor;
  result: 'succeeded' | 'denied' | 'failed';
  reason?: string | null;
  requestId?: string | null;
}

/**
 * The completion of a request's Idempotency-Key (core/idempotency.ts), written by the statement
 * that writes the request's audit event: one round trip instead of two on every creating request.
 */
export interface KeyCompletion {
  key: string;
  /** The request's claim of the key: the completion fails (and the change with it) if the key was taken over. */
  claim: string;
  status: number;
  /** The stored response, already serialized ('' when there is no body). */
  body: string;
}

const AUDIT_INSERT = `INSERT INTO audit_events (id, org_id, action, resource_type, resource_id, result, actor_sub, actor_realm,
       actor_token_id, before, after, operation_id, reason, request_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`;

/**
 * The event and the key's completion in one statement. complete_idempotency_key (migration 0991)
 * raises a serialization failure when the key was taken over meanwhile, which rolls the change back.
 */
const AUDIT_INSERT_COMPLETING_KEY = `WITH completed AS (SELECT complete_idempotency_key($2, $15, $18, $16, $17))
     INSERT INTO audit_events (id, org_id, action, resource_type, resource_id, result, actor_sub, actor_realm,
       actor_token_id, before, after, operation_id, reason, request_id)
     SELECT $1::uuid, $2::uuid, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::uuid, $10::jsonb, $11::jsonb,
       $12::uuid, $13::text, $14::text
     FROM completed`;

/**
 * The statement that writes an audit event; with `completing`, it also completes that
 * Idempotency-Key of the event's organization. Named statements: parsed and planned once per
 * connection. (Only statements without `*` in their result are named: a column a later migration
 * adds would change a prepared statement's result type, which fails it in every process still
 * running.)
 */
export function auditStatement(record: AuditRecord, completing?: KeyCompletion, events: readonly NewEvent[] = []): QueryConfig {
  const values: unknown[] = [
    randomUUID(),
    record.orgId,
    record.action,
    record.resourceType,
    resourceIdOf(record.resourceId),
    record.result,
    record.actor.subject,
    record.actor.realm,
    record.actor.tokenId,
    snapshotOf(record.before),
    snapshotOf(record.after),
    record.operationId ?? null,
    reasonOf(record.reason),
    record.requestId ?? null,
  ];
  const statement: QueryConfig = completing
    ? {
        name: 'audit-insert-completing-claimed-key',
        text: AUDIT_INSERT_COMPLETING_KEY,
        values: [...values, completing.key, completing.status, completing.body, completing.claim],
      }
    : { name: 'audit-insert', text: AUDIT_INSERT, values };
  return withEvents(statement, events);
}

/**
 * The statement with the change's events written by it too (a data-modifying WITH runs whether or
 * not it is read): one statement per change rather than two, which PostgreSQL and this process
 * each handle for every write.
 */
function withEvents(statement: QueryConfig, events: readonly NewEvent[]): QueryConfig {
  const eventValues = eventsValues(events);
  if (!eventValues) return statement;
  const values: unknown[] = statement.values ?? [];
  const recorded = `recorded_events AS (${eventsInsert(values.length + 1)})`;
  const text = statement.text.startsWith('WITH ') ? `WITH ${recorded}, ${statement.text.slice(5)}` : `WITH ${recorded} ${statement.text}`;
  return { name: `${statement.name}-with-events`, text, values: [...values, ...eventValues] };
}

/** Writes an audit event (and completes an Idempotency-Key with it): `auditStatement`, run. */
export async function recordAudit(db: Queryable, record: AuditRecord, completing?: KeyCompletion): Promise<void> {
  await db.query(auditStatement(record, completing));
}

/** The contract's form of a resource id; a path segment that is none (`%00`, a long string) names no resource. */
const RESOURCE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function resourceIdOf(id: string | null | undefined): string | null {
  return id != null && RESOURCE_ID.test(id) ? id : null;
}

/** A reason as the contract reads it: one line of at most 500 characters (it may quote the request). */
function reasonOf(reason: string | null | undefined): string | null {
  if (reason == null) return null;
  const line = reason.replace(/[\u0000-\u001f]/g, ' ').trim();
  if (line === '') return null;
  return line.length <= 500 ? line : `${line.slice(0, 497)}...`;
}

/** A snapshot as jsonb, which cannot hold NUL (`\u0000`): written as U+FFFD, so the event is never lost to its content. */
function snapshotOf(snapshot: object | null | undefined): string | null {
  return snapshot ? stringify(snapshot)!.replaceAll('\\u0000', '\\ufffd') : null;
}
