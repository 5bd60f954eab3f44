import { defineArea, type AreaDependencies } from '../area.ts';
import { auditHandlers } from './audit-handlers.ts';

/** Audit: every write's event, allowed or denied, read newest first with filters. */
export function auditArea({ pool }: AreaDependencies) {
  return defineArea({ executors: {}, handlers: auditHandlers({ pool }), auditNames: {} });
}
