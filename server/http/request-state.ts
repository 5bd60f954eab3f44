import type { Response } from 'express';
import type { ClaimedKey } from '../core/idempotency.ts';
import type { Principal } from '../core/principal.ts';
import type { RequestAudit } from '../core/request-audit.ts';
import type { Logger } from '../logging.ts';
import type { MatchedRoute } from './route-table.ts';

/** What the pipeline learns about a request, kept on `res.locals` from one stage to the next. */
export interface RequestState {
  requestId: string;
  startedAt: number;
  /** The request's logger (request id, organization once known), made when first used. */
  readonly log: Logger;
  route?: MatchedRoute;
  principal?: Principal;
  /** Integers of the body beyond 2^53, put back exactly after validation. */
  exactIntegers?: ExactInteger[];
  /** The Idempotency-Key this request claimed. */
  idempotency?: ClaimedKey;
  /** The request's audit trail, once its credential is known. */
  audit?: RequestAudit;
}

/** An integer of the request body beyond 2^53, and where it is. */
export interface ExactInteger {
  path: Array<string | number>;
  value: bigint;
}

export function stateOf(res: Response): RequestState {
  return res.locals as RequestState;
}
