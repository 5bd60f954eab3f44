import type { Logger } from '../logging.ts';
import type { Principal } from './principal.ts';
import type { RequestAudit } from './request-audit.ts';

/** What a handler knows about the request it serves. */
export interface RequestContext {
  requestId: string;
  principal: Principal;
  log: Logger;
  /** The Idempotency-Key claimed for this request, completed with its response. */
  idempotency: { key: string } | undefined;
  /** The request's audit trail: a change records its success through it. */
  audit: RequestAudit;
}
