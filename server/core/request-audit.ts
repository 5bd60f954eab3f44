import type { QueryConfig } from 'pg';
import type { Queryable } from '../db/pool.ts';
import { auditStatement, recordAudit, type KeyCompletion } from './audit.ts';
import type { AuditName } from './audit-names.ts';
import type { NewEvent } from './events.ts';
import { actorOf, type Principal } from './principal.ts';

/** What a successful change records beside its names: the resource, before and after, its operation. */
export interface AuditedChange {
  resourceId?: string | null;
  before?: object | null;
  after?: object | null;
  operationId?: string | null;
}

/** How a refused request is recorded: its problem's status, code and detail. */
export interface Refusal {
  status: number;
  code: string;
  detail: string;
}

/**
 * The audit trail of one API request, the one path by which requests leave audit events: at most
 * one event per request, succeeded (written in the transaction of the change), denied (401/403)
 * or failed. Its action and resource type are the operation's audit names (each area declares
 * them); an operation without any (a read) leaves none.
 */
export class RequestAudit {
  private recorded = false;

  private readonly operationId: string;
  private readonly names: AuditName | undefined;
  private readonly pathParams: Record<string, string>;
  private readonly principal: Principal;
  private readonly requestId: string;

  constructor(
    operation: { id: string; auditNames: AuditName | undefined },
    pathParams: Record<string, string>,
    principal: Principal,
    requestId: string,
  ) {
    this.operationId = operation.id;
    this.names = operation.auditNames;
    this.pathParams = pathParams;
    this.principal = principal;
    this.requestId = requestId;
  }

  /**
   * Records the success of a change, in its transaction (completing the request's
   * Idempotency-Key in the same statement, when given). Call `committed` once it commits.
   */
  async succeeded(tx: Queryable, change: AuditedChange, completing?: KeyCompletion): Promise<void> {
    await tx.query(this.successStatement(change, completing));
  }

  /** The statement `succeeded` runs, for a transaction that sends it with its COMMIT; it also writes `events`. */
  successStatement(change: AuditedChange, completing?: KeyCompletion, events: readonly NewEvent[] = []): QueryConfig {
    const names = this.names;
    if (!names) throw new Error(`operation ${this.operationId} has no audit names (its area's auditNames)`);
    return auditStatement(
      { action: names.action, resourceType: names.resourceType, ...change, ...this.who(), result: 'succeeded' },
      completing,
      events,
    );
  }

  /** The change and its event have committed: nothing more is recorded for this request. */
  committed(): void {
    this.recorded = true;
  }

  /**
   * Records a write that was refused or failed, unless an event was already recorded. Reads
   * (GET) leave no event. The resource is the one the path names, if any.
   */
  async refused(db: Queryable, method: string, refusal: Refusal): Promise<void> {
    const names = this.names;
    if (this.recorded || !names || method === 'GET') return;
    this.recorded = true;
    await recordAudit(db, {
      action: names.action,
      resourceType: names.resourceType,
      resourceId: names.idParam ? this.pathParams[names.idParam] : null,
      ...this.who(),
      result: refusal.status === 401 || refusal.status === 403 ? 'denied' : 'failed',
      reason: `${refusal.code}: ${refusal.detail}`,
    });
  }

  private who() {
    return { orgId: this.principal.orgId, actor: actorOf(this.principal), requestId: this.requestId };
  }
}
