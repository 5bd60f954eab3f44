import type { Area, AreaDependencies } from '../area.ts';
import { apiTokenHandlers } from './api-token-handlers.ts';
import { createApiTokenService } from './api-token-service.ts';

/** API keys: created with a secret shown once, listed as metadata, revoked at once. */
export function apiTokensArea(
  { pool, clock }: AreaDependencies,
  credentialsChanged?: () => Promise<void>,
): Area<'createApiToken' | 'listApiTokens' | 'revokeApiToken'> {
  return {
    executors: {},
    handlers: apiTokenHandlers({ pool, tokens: createApiTokenService(clock), credentialsChanged }),
  };
}
