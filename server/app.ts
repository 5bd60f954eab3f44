import express, { type Express, type RequestHandler, type Router } from 'express';
import type { OperationHandlers } from '../generated/operations.ts';
import type { IdentityResolver } from './areas/identity/credentials/identity-resolver.ts';
import type { Config } from './config.ts';
import type { AuditNameTable } from './core/audit-names.ts';
import type { KeyHolder } from './core/idempotency.ts';
import type { RequestContext } from './core/request-context.ts';
import type { Pool } from './db/pool.ts';
import { authenticate, authorize } from './http/authentication.ts';
import { cors } from './http/cors.ts';
import { errorHandler } from './http/error-handler.ts';
import { idempotency } from './http/idempotency.ts';
import { jsonBody, restoreExactIntegers } from './http/json-body.ts';
import { queryLiterals } from './http/query-literals.ts';
import type { RateLimits } from './http/rate-limit.ts';
import { dispatch } from './http/dispatch.ts';
import { requestId } from './http/request-id.ts';
import { routing } from './http/routing.ts';
import { deprecation } from './http/deprecation.ts';
import { preparedJson } from './http/send.ts';
import { securityHeaders } from './http/security-headers.ts';
import { stages } from './http/stages.ts';
import { settleLegacyUrlParseCheck } from './http/url-parse-check.ts';
import { contractValidator, reuseOperationLookups, translateValidatorErrors } from './http/validation.ts';
import type { Logger } from './logging.ts';
import type { Metrics } from './metrics.ts';

export interface AppDependencies {
  config: Pick<Config, 'validateResponses' | 'publicBaseUrl'>;
  pool: Pool;
  log: Logger;
  identity: IdentityResolver;
  /** Counts requests per address and credential (shared with the answers to unparseable requests). */
  rateLimits: RateLimits;
  /** Requests answered, by operation and status (absent: not measured). */
  metrics?: Metrics;
  handlers: OperationHandlers<RequestContext>;
  /** Each operation's audit names, collected from the areas. */
  auditNames: AuditNameTable;
  /** The contract's validator, when made (and warmed up) ahead of the app; made here otherwise. */
  contract?: RequestHandler[];
  /** Pages outside /v1 and the contract (the console page, invoice documents), served before routing. */
  pages?: Router[];
  /** This process, as the Idempotency-Keys it claims name it (see db/process-liveness.ts). */
  keyHolder: KeyHolder;
}

/**
 * The HTTP application, as a visible chain: prepared JSON (send.ts) → request id → security headers → CORS → rate limit
 * by address → pages outside the contract → route (→ Deprecation and Sunset headers of a deprecated operation) → credential → rate limit by credential → permission → JSON body → integer query literals → contract validation → Idempotency-Key → handler, and one error
 * handler at the end that turns every failure into a problem document. The stages run in groups
 * (stages.ts), one Express layer each.
 */
export function createApp({
  config,
  pool,
  log,
  identity,
  handlers,
  auditNames,
  metrics,
  rateLimits,
  contract,
  pages = [],
  keyHolder,
}: AppDependencies): Express {
  settleLegacyUrlParseCheck();
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(
    stages(
      preparedJson,
      requestId(log, metrics),
      securityHeaders({ https: config.publicBaseUrl?.startsWith('https:') ?? false }),
      cors,
      rateLimits.byAddress,
    ),
  );
  for (const page of pages) app.use(page);
  app.use(
    stages(
      routing,
      deprecation,
      authenticate(identity, auditNames),
      rateLimits.byCredential,
      authorize,
      jsonBody,
      queryLiterals,
      ...reuseOperationLookups(contract ?? contractValidator({ validateResponses: config.validateResponses })),
    ),
  );
  app.use(translateValidatorErrors);
  app.use(stages(restoreExactIntegers, idempotency(pool, keyHolder), dispatch(handlers)));
  app.use(errorHandler(pool));
  return app;
}
