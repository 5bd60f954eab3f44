import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import type { NewEvent } from './events.ts';
import { storedBody } from './idempotency.ts';
import { runGrouped } from './write-groups.ts';
import type { AuditedChange } from './request-audit.ts';
import type { RequestContext } from './request-context.ts';

/** Backend work that follows a committed change, outside any transaction. */
export type AfterCommit = () => Promise<void>;

export interface WriteOutcome<Response extends { status: number; body?: unknown }> {
  response: Response;
  /** What the audit event records; its action comes from the operation (core/audit-names.ts). */
  audit: AuditedChange;
  /** What the change announces (core/events.ts): written with the audit event, in its transaction. */
  events?: readonly NewEvent[];
  /** The body an idempotent replay returns, when it differs (secrets shown once removed). */
  replayBody?: unknown;
  /**
   * Backend work that follows the change, run once it has committed and before the response
   * goes: a backend is never called inside the transaction. Should it fail, the change stands
   * and the failure is logged.
   */
  afterCommit?: AfterCommit;
}

/** The body an idempotent replay of the request returns. */
function replayBodyOf(outcome: WriteOutcome<{ status: number; body?: unknown }>): unknown {
  return 'replayBody' in outcome ? outcome.replayBody : outcome.response.body;
}

/** How a write is run: in a transaction of its own, or grouped with the creations arriving with it (core/write-groups.ts). */
export interface WriteOptions {
  /** Only for changes that lock nothing but what they create (see write-groups.ts). */
  grouped?: boolean;
}

/**
 * Runs a change of an API request as one transaction with everything that goes with it: the
 * audit event, the events it announces, the operation record (queued by `work`), and the
 * completion of the request's Idempotency-Key. Grouped, the transaction may be shared with other
 * requests' changes, each in a savepoint of its own.
 */
export async function performWrite<Response extends { status: number; body?: unknown }>(
  pool: Pool,
  context: RequestContext,
  work: (tx: PoolClient) => Promise<WriteOutcome<Response>>,
  options: WriteOptions = {},
): Promise<Response> {
  // The audit event, the key's stored response and the announced events are one statement, sent
  // with the COMMIT.
  const finalStatements = (result: WriteOutcome<Response>) => [
    context.audit.successStatement(
      result.audit,
      context.idempotency
        ? {
            key: context.idempotency.key,
            claim: context.idempotency.claim,
            status: result.response.status,
            body: storedBody(replayBodyOf(result)),
          }
        : undefined,
      result.events ?? [],
    ),
  ];
  const outcome = options.grouped ? await runGrouped(pool, { work, finalStatements }) : await withTransaction(pool, work, finalStatements);
  context.audit.committed();
  if (outcome.afterCommit) {
    await outcome
      .afterCommit()
      .catch((error: unknown) => context.log.warn({ err: error }, 'the backend work following a committed change failed'));
  }
  return outcome.response;
}
