// Verifying webhook deliveries: the Standard Webhooks signature, checked by the `standardwebhooks`
// package, and the body read exactly (big integers intact) as the event the contract declares.
import { Webhook, WebhookVerificationError as LibraryVerificationError } from 'standardwebhooks';
import type { webhooks } from '../generated/openapi.ts';
import { parseJson } from './json.ts';

/** Every event a webhook endpoint can receive, as the contract's webhooks section declares it; discriminated by `type`. */
export type WebhookEvent = {
  [Name in keyof webhooks]: NonNullable<webhooks[Name]['post']>['requestBody']['content']['application/json'];
}[keyof webhooks];

/** The headers of a delivery, however the server framework hands them over (names in any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * A delivery whose signature, headers or timestamp do not verify. The client's own class, not the
 * `standardwebhooks` one it wraps: that package's declarations need Node's types (`Buffer`), and a
 * project compiling against this client should not have to install them to catch this error.
 */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/**
 * The event a delivery carries, once its signature is verified with the endpoint's secret
 * (`whsec_…`; after a rotation, either secret's signature is accepted). Throws
 * `WebhookVerificationError` when the signature does not match, a header is missing, or the
 * timestamp is more than five minutes from this machine's clock (a replay). `body` is the raw
 * request body, as received: verify before parsing, never a re-serialized object.
 *
 *   app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 *     const event = verifyWebhook(process.env.WEBHOOK_SECRET!, req.headers, req.body);
 *     if (event.type === 'operation.succeeded') console.log(event.data.operation.id);
 *     res.sendStatus(204);
 *   });
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Uint8Array): WebhookEvent {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  try {
    new Webhook(secret).verify(text, headerRecord(headers), { jsonParse: false });
  } catch (error) {
    if (error instanceof LibraryVerificationError) throw new WebhookVerificationError(error.message);
    throw error;
  }
  return parseJson(text) as WebhookEvent;
}

function headerRecord(headers: WebhookHeaders): Record<string, string> {
  if (typeof (headers as Headers).get === 'function') {
    const record: Record<string, string> = {};
    (headers as Headers).forEach((value, name) => (record[name] = value));
    return record;
  }
  const record: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value !== undefined) record[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return record;
}
