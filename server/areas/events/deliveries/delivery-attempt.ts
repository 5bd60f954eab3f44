import { stringify } from 'lossless-json';
import type { EventsConfig } from '../../../config.ts';
import { iso } from '../../../core/clock.ts';
import { DomainError } from '../../../core/errors.ts';
import { LruMap } from '../../../core/lru-map.ts';
import type { SecretBox } from '../../../drivers/embedded/secret-box.ts';
import { toEventOut, type EventRow } from '../events/event-rows.ts';
import { signatureHeader } from '../webhook-endpoints/endpoint-secrets.ts';
import type { EndpointRow } from '../webhook-endpoints/endpoint-rows.ts';
import { allowedAddresses, checkUrlForm, type HostResolver } from '../webhook-endpoints/url-safety.ts';
import { postSigned } from './delivery-http.ts';
import type { DeliveryAttempt } from './delivery-rows.ts';
import { ReceiverConnections } from './receiver-connections.ts';

/** Signing secrets kept open at most (endpoints attempted recently). */
const MAX_OPENED_SECRETS = 1_000;

/** A delivery claimed for an attempt: its event and its endpoint as they are now. */
export interface ClaimedDelivery {
  id: string;
  event: EventRow;
  endpoint: EndpointRow;
}

export interface DeliveryAttempts {
  /** One attempt of the delivery; `signal` cuts it short (the stop). */
  make(delivery: ClaimedDelivery, signal: AbortSignal): Promise<DeliveryAttempt>;
  /** Closes the connections kept to receivers. */
  close(): void;
}

/**
 * One attempt of a delivery, signed as the Standard Webhooks specification says: the event's own
 * id is the `webhook-id` (a message sent again is the same message), and the endpoint's current
 * secret signs it, with the previous one too until it expires. Never throws for what the receiver
 * does: its answer, silence or refusal is the attempt's record.
 */
export function deliveryAttempts(deps: { config: EventsConfig; secrets: SecretBox; resolveHost: HostResolver }): DeliveryAttempts {
  const { config, secrets, resolveHost } = deps;
  const connections = new ReceiverConnections(config.keepAliveMs);

  /**
   * Secrets opened, by their sealed form (a new IV each time one is sealed, so a rotation is a new
   * entry): opening one (AES-GCM) was a third of an attempt's CPU. The least recently used go first.
   */
  const opened = new LruMap<string, string>(MAX_OPENED_SECRETS);
  function open(sealed: string): string {
    let secret = opened.get(sealed);
    if (secret === undefined) {
      secret = secrets.open(sealed);
      opened.set(sealed, secret);
    }
    return secret;
  }

  /** The secrets that sign now: the current one, and the previous one until it expires. */
  function signingSecrets(endpoint: EndpointRow, now: Date): string[] {
    const previous =
      endpoint.previous_secret_sealed && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now
        ? [open(endpoint.previous_secret_sealed)]
        : [];
    return [open(endpoint.secret_sealed), ...previous];
  }

  async function make(delivery: ClaimedDelivery, signal: AbortSignal): Promise<DeliveryAttempt> {
    const { event, endpoint } = delivery;
    const attemptedAt = new Date();
    const at = iso(attemptedAt);
    if (!endpoint.enabled) return { attempted_at: at, status_code: null, latency_ms: 0, outcome: 'endpoint_disabled' };
    let url: URL;
    let addresses: string[];
    try {
      // Checked again at every attempt: the name may resolve elsewhere than when it was created.
      url = checkUrlForm(endpoint.url, config.allowInsecureUrls);
      addresses = await allowedAddresses(url, resolveHost, config.allowInsecureUrls);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return { attempted_at: at, status_code: null, latency_ms: 0, outcome: 'address_not_allowed' };
    }
    const body = stringify(toEventOut(event))!;
    const result = await postSigned({
      url,
      addresses,
      body,
      timeoutMs: config.timeoutMs,
      signal,
      agent: connections.agentFor(url, addresses[0]!),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'CloudPlatform-Webhooks/1.0',
        'webhook-id': event.id,
        'webhook-timestamp': String(Math.floor(attemptedAt.getTime() / 1000)),
        'webhook-signature': signatureHeader(signingSecrets(endpoint, attemptedAt), event.id, attemptedAt, body),
      },
    });
    return { attempted_at: at, ...result };
  }

  return { make, close: () => connections.close() };
}
