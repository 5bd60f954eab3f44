import { createHmac, randomBytes } from 'node:crypto';
import { createSecretBox, loadSecretBoxKey, type SecretBox } from '../../../drivers/embedded/secret-box.ts';

/** What a Standard Webhooks secret begins with; the base64 of its key follows. */
const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes, as Standard Webhooks libraries read it. */
export const newSigningSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/**
 * The endpoints' signing secrets at rest: the platform must sign with them, so it keeps them, but
 * sealed (AES-256-GCM) with the secret store's key (SECRET_STORE_KEY, or DATA_DIR/secret-store.key),
 * which processes sharing a database share. Opened only to sign a delivery.
 */
export function endpointSecrets(dataDir: string, configuredKey: string | undefined): SecretBox {
  let box: SecretBox | undefined;
  // Loaded at first use: building the area (the admin command builds every area) touches no file.
  const opened = () => (box ??= createSecretBox(loadSecretBoxKey(dataDir, configuredKey)));
  return { seal: (plain) => opened().seal(plain), open: (sealed) => opened().open(sealed) };
}

/**
 * The `webhook-signature` header of a message, as Standard Webhooks signs it: one `v1,…` per
 * secret, the newest first (after a rotation, the previous secret signs too until it expires),
 * each the base64 HMAC-SHA256 of `{id}.{unix seconds}.{body}` under the secret's key. Node's HMAC
 * rather than the `standardwebhooks` package's, whose SHA-256 is JavaScript: 6 to 7 µs a
 * signature against 26 to 28 (a 730-byte event). Receivers check it with that package (the tests do).
 */
export function signatureHeader(secrets: readonly string[], messageId: string, timestamp: Date, body: string): string {
  const signed = `${messageId}.${Math.floor(timestamp.getTime() / 1000)}.${body}`;
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
      return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
    })
    .join(' ');
}
