import type { Logger } from '../logging.ts';
import type { ClaimedKey } from './idempotency.ts';
import type { Principal } from './principal.ts';
import type { RequestAudit } from './request-audit.ts';

/** What a handler knows about the request it serves. */
export interface RequestContext {
  requestId: string;
  /**
   * The caller. Operations that take no credential (health probes, `scope: none`) have none and
   * never read it; reading it there throws rather than answering for nobody.
   */
  principal: Principal;
  log: Logger;
  /** The Idempotency-Key claimed for this request (and the claim), completed with its response. */
  idempotency: ClaimedKey | undefined;
  /** The request's audit trail: a change records its success through it. */
  audit: RequestAudit;
}
