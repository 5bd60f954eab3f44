import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createSecretBox, loadSecretBoxKey, type SecretBox } from '../../../drivers/embedded/secret-box.ts';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes, as Standard Webhooks libraries read it. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

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
 * The `webhook-signature` header of a message, by the `standardwebhooks` package: one `v1,…` per
 * secret, the newest first (after a rotation, the previous secret signs too until it expires).
 */
export function signatureHeader(secrets: readonly string[], messageId: string, timestamp: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(messageId, timestamp, body)).join(' ');
}
