import { defineArea, type AreaDependencies } from '../area.ts';
import { accountHandlers } from './account/account-handlers.ts';
import { apiTokenHandlers } from './api-tokens/api-token-handlers.ts';
import { createApiTokenService } from './api-tokens/api-token-service.ts';
import { organizationHandlers } from './organizations/organization-handlers.ts';

/**
 * Identity: the account a credential opens, organizations and their members, API keys (created with a secret shown once, listed
 * as metadata, revoked at once), and the credentials every request is authenticated by
 * (credentials/: API keys and OIDC tokens, cached until a change is announced).
 */
export function identityArea({ pool, clock, credentials, ports }: AreaDependencies) {
  return defineArea({
    executors: {},
    handlers: {
      ...accountHandlers({ pool }),
      ...organizationHandlers({ pool, ports }),
      ...apiTokenHandlers({ pool, tokens: createApiTokenService(clock), credentialsChanged: (tags) => credentials.changed(tags) }),
    },
    auditNames: {
      createApiToken: { action: 'api_token.create', resourceType: 'api_token' },
      revokeApiToken: { action: 'api_token.revoke', resourceType: 'api_token', idParam: 'token_id' },
    },
  });
}
