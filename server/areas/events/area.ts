import { lookup } from 'node:dns/promises';
import { defineArea, type AreaDependencies } from '../area.ts';
import { deliverer } from './deliveries/deliverer.ts';
import { deliveryAttempts } from './deliveries/delivery-attempt.ts';
import { eventHandlers } from './events/event-handlers.ts';
import { eventRetention } from './events/event-retention.ts';
import { endpointHandlers } from './webhook-endpoints/endpoint-handlers.ts';
import { endpointSecrets } from './webhook-endpoints/endpoint-secrets.ts';
import { createEndpointService } from './webhook-endpoints/endpoint-service.ts';
import type { HostResolver } from './webhook-endpoints/url-safety.ts';

/** The system's resolver: every address of the name, as a connection would find them. */
const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Events: the organization's event log (written by every area where its changes commit, through
 * core/events.ts; read here, and purged after the operator's retention) and its webhooks:
 * endpoints with sealed signing secrets, and deliveries fanned out from the log by the database,
 * leased to a process's deliverer and attempted there, signed as the Standard Webhooks
 * specification says.
 */
export function eventsArea({ pool, config, clock, listener, log, resolveHost = systemResolver }: AreaDependencies) {
  const secrets = endpointSecrets(config.dataDir, config.s3.secretStoreKey);
  const endpoints = createEndpointService({ config: config.events, clock, secrets, resolveHost });
  return defineArea({
    handlers: { ...eventHandlers({ pool }), ...endpointHandlers({ pool, endpoints }) },
    // Endpoints are settings of the organization: their audit events are about it (the contract's
    // audit resource types are a closed list).
    auditNames: {
      createWebhookEndpoint: { action: 'webhook_endpoint.create', resourceType: 'organization' },
      updateWebhookEndpoint: { action: 'webhook_endpoint.update', resourceType: 'organization' },
      deleteWebhookEndpoint: { action: 'webhook_endpoint.delete', resourceType: 'organization' },
      rotateWebhookEndpointSecret: { action: 'webhook_endpoint.rotate_secret', resourceType: 'organization' },
      testWebhookEndpoint: { action: 'webhook_endpoint.test', resourceType: 'organization' },
      resendWebhookEndpointDelivery: { action: 'webhook_endpoint.resend', resourceType: 'organization' },
    },
    executors: {},
    background: [
      deliverer({
        pool,
        config: config.events,
        listener,
        leaseMs: config.engine.leaseMs,
        attempts: deliveryAttempts({ config: config.events, secrets, resolveHost }),
        log,
      }),
      eventRetention({ pool, clock, retentionDays: config.events.retentionDays }),
    ],
  });
}
