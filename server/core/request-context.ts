import type { Logger } from '../logging.ts';
import type { Principal } from './principal.ts';

/** What a handler knows about the request it serves. */
export interface RequestContext {
  requestId: string;
  principal: Principal;
  log: Logger;
  /** The Idempotency-Key claimed for this request, completed with its response. */
  idempotency: { key: string } | undefined;
  /** Shared with the pipeline: set once the request's audit event is written. */
  flags: { audited?: boolean };
}
