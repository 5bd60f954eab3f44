import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import { OPERATIONS_CHANNEL } from '../engine/engine.ts';
import type { AfterCommit } from '../engine/executor.ts';
import { recordAudit, type AuditEntry } from './audit.ts';
import { completeKey } from './idempotency.ts';
import { actorOf } from './principal.ts';
import type { RequestContext } from './request-context.ts';

export interface WriteOutcome<Response extends { status: number; body?: unknown }> {
  response: Response;
  audit: AuditEntry;
  /** The body an idempotent replay returns, when it differs (secrets shown once removed). */
  replayBody?: unknown;
  /**
   * Backend work that follows the change, run once it has committed and before the response
   * goes: a backend is never called inside the transaction. Should it fail, the change stands
   * and the failure is logged.
   */
  afterCommit?: AfterCommit;
}

/**
 * Runs a change of an API request as one transaction with everything that goes with it: the
 * audit event, the operation record (queued by `work`), and the completion of the request's
 * Idempotency-Key. Workers are notified of queued operations when it commits.
 */
export async function performWrite<Response extends { status: number; body?: unknown }>(
  pool: Pool,
  context: RequestContext,
  work: (tx: PoolClient) => Promise<WriteOutcome<Response>>,
): Promise<Response> {
  const outcome = await withTransaction(pool, async (tx) => {
    const result = await work(tx);
    await recordAudit(tx, {
      ...result.audit,
      orgId: context.principal.orgId,
      actor: actorOf(context.principal),
      result: 'succeeded',
      requestId: context.requestId,
    });
    if (context.idempotency) {
      const replayBody = 'replayBody' in result ? result.replayBody : result.response.body;
      await completeKey(tx, context.principal.orgId, context.idempotency.key, result.response.status, replayBody);
    }
    // Delivered at commit, to the workers of every process sharing the database.
    if (result.audit.operationId) await tx.query('SELECT pg_notify($1, $2)', [OPERATIONS_CHANNEL, result.audit.operationId]);
    return result;
  });
  context.flags.audited = true;
  if (outcome.afterCommit) {
    await outcome.afterCommit().catch((error: unknown) => context.log.warn({ err: error }, 'the backend work following a committed change failed'));
  }
  return outcome.response;
}
