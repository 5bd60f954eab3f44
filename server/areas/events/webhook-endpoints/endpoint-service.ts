import type { EventsConfig } from '../../../config.ts';
import type { Clock } from '../../../core/clock.ts';
import { conflict } from '../../../core/errors.ts';
import { newEventId, recordEvents } from '../../../core/events.ts';
import type { PoolClient } from '../../../db/pool.ts';
import type { SecretBox } from '../../../drivers/embedded/secret-box.ts';
import { findEvent } from '../events/event-rows.ts';
import { findDelivery, insertDelivery, type DeliveryRow } from '../deliveries/delivery-rows.ts';
import { newSigningSecret } from './endpoint-secrets.ts';
import {
  countEndpointsLocked,
  findEndpoint,
  insertEndpoint,
  rotateSecret,
  updateEndpoint,
  type EndpointChanges,
  type EndpointRow,
} from './endpoint-rows.ts';
import { allowedAddresses, checkUrlForm, type HostResolver } from './url-safety.ts';

/** Endpoints an organization may have (Stripe's limit too). */
export const MAX_ENDPOINTS = 16;
/** How long a rotated-out secret keeps signing. */
const PREVIOUS_SECRET_VALID_MS = 24 * 3_600_000;

const endpointDisabled = (endpointId: string) =>
  conflict(
    'webhook_endpoint_disabled',
    'Webhook endpoint disabled',
    `Webhook endpoint ${endpointId} is disabled; enable it with updateWebhookEndpoint first.`,
  );

/**
 * The rules of webhook endpoints: safe URLs only (checked here, and again at every delivery),
 * at most MAX_ENDPOINTS per organization, secrets shown once and kept sealed, a rotation that
 * lets the previous secret sign for a day, and tests and resends only to enabled endpoints.
 */
export function createEndpointService(deps: { config: EventsConfig; clock: Clock; secrets: SecretBox; resolveHost: HostResolver }) {
  const { config, clock, secrets, resolveHost } = deps;

  /** The URL as stored, refused unless every address its host resolves to may be reached. */
  async function safeUrl(raw: string): Promise<string> {
    const url = checkUrlForm(raw, config.allowInsecureUrls);
    await allowedAddresses(url, resolveHost, config.allowInsecureUrls);
    return url.toString();
  }

  return {
    /** Checked before the transaction: resolving a name is a call outside the platform. */
    safeUrl,

    async create(
      tx: PoolClient,
      orgId: string,
      request: { url: string; description: string | null; eventTypes: string[]; enabled: boolean },
    ): Promise<{ endpoint: EndpointRow; secret: string }> {
      if ((await countEndpointsLocked(tx, orgId)) >= MAX_ENDPOINTS) {
        throw conflict(
          'webhook_endpoint_limit_reached',
          'Webhook endpoint limit reached',
          `This organization has ${MAX_ENDPOINTS} webhook endpoints, the most it may have; delete one first.`,
        );
      }
      const secret = newSigningSecret();
      const endpoint = await insertEndpoint(tx, {
        orgId,
        ...request,
        eventTypes: [...new Set(request.eventTypes)],
        secretSealed: secrets.seal(secret),
      });
      return { endpoint, secret };
    },

    async update(
      tx: PoolClient,
      orgId: string,
      endpointId: string,
      changes: EndpointChanges,
    ): Promise<{ before: EndpointRow; after: EndpointRow }> {
      const before = await findEndpoint(tx, orgId, endpointId, true);
      const eventTypes = changes.eventTypes && [...new Set(changes.eventTypes)];
      return { before, after: await updateEndpoint(tx, endpointId, { ...changes, ...(eventTypes && { eventTypes }) }) };
    },

    async rotate(tx: PoolClient, orgId: string, endpointId: string): Promise<{ endpoint: EndpointRow; secret: string }> {
      await findEndpoint(tx, orgId, endpointId, true);
      const secret = newSigningSecret();
      const previousValidUntil = new Date(clock.now().getTime() + PREVIOUS_SECRET_VALID_MS);
      return { endpoint: await rotateSecret(tx, endpointId, secrets.seal(secret), previousValidUntil), secret };
    },

    /** A `ping` event, recorded and delivered to this endpoint only. */
    async ping(tx: PoolClient, orgId: string, endpointId: string) {
      const endpoint = await findEndpoint(tx, orgId, endpointId);
      if (!endpoint.enabled) throw endpointDisabled(endpointId);
      const eventId = newEventId();
      await recordEvents(tx, [{ id: eventId, orgId, type: 'ping', resourceId: endpointId, data: { webhook_endpoint_id: endpointId } }]);
      const delivery = await insertDelivery(tx, orgId, endpointId, eventId);
      return { event: await findEvent(tx, orgId, eventId), delivery };
    },

    /** The delivery's event, delivered again as a new delivery (with the same webhook-id: the event's). */
    async resend(tx: PoolClient, orgId: string, endpointId: string, deliveryId: string): Promise<DeliveryRow> {
      const delivery = await findDelivery(tx, orgId, endpointId, deliveryId);
      const endpoint = await findEndpoint(tx, orgId, endpointId);
      if (!endpoint.enabled) throw endpointDisabled(endpointId);
      return insertDelivery(tx, orgId, endpointId, delivery.event_id);
    },
  };
}

export type EndpointService = ReturnType<typeof createEndpointService>;
