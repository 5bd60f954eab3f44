import { randomUUID } from 'node:crypto';
// Snapshots are JSON with exact integers: the spend budget's 2^63-1 stays exact.
import { stringify } from 'lossless-json';
import type { Queryable } from '../db/pool.ts';
import type { components } from '../../generated/openapi.ts';
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

export async function recordAudit(db: Queryable, record: AuditRecord): Promise<void> {
  await db.query(
    `INSERT INTO audit_events (id, org_id, action, resource_type, resource_id, result, actor_sub, actor_realm,
       actor_token_id, before, after, operation_id, reason, request_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      randomUUID(),
      record.orgId,
      record.action,
      record.resourceType,
      record.resourceId ?? null,
      record.result,
      record.actor.subject,
      record.actor.realm,
      record.actor.tokenId,
      record.before ? stringify(record.before) : null,
      record.after ? stringify(record.after) : null,
      record.operationId ?? null,
      record.reason ?? null,
      record.requestId ?? null,
    ],
  );
}
