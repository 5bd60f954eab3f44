import { defineArea, type AreaDependencies } from '../area.ts';
import { healthHandlers } from './health-handlers.ts';

/** Health: liveness and readiness probes, outside /v1 and without a credential. */
export function healthArea({ pool, config, ports }: AreaDependencies) {
  return defineArea({ executors: {}, handlers: healthHandlers({ pool, config, ports }), auditNames: {} });
}
