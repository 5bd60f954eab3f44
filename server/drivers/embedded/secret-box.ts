import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileDurably } from '../../durable-files.ts';

/**
 * Seals secrets with AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>` (base64url). The key is
 * SECRET_STORE_KEY (base64, 32 bytes) when set, which several processes sharing one database
 * must share; otherwise DATA_DIR/secret-store.key, made (mode 0600) on the first start.
 */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function loadSecretBoxKey(dataDir: string, configured: string | undefined): Buffer {
  if (configured) {
    const key = Buffer.from(configured, 'base64');
    if (key.length !== 32) throw new Error('SECRET_STORE_KEY must be 32 bytes, base64');
    return key;
  }
  const file = path.join(dataDir, 'secret-store.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    // Two processes starting together keep the first one's key; and it is on disk, whole, before
    // anything is sealed with it (should the machine lose power, the secrets stay readable).
    writeFileDurably(file, randomBytes(32).toString('base64'), { exclusive: true });
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte key`);
  return key;
}

export function createSecretBox(rawKey: Buffer): SecretBox {
  // Made once: given the raw bytes, every cipher made its own key object from them, which was
  // most of what opening a secret cost (a webhook attempt opens its endpoint's secret to sign).
  const key = createSecretKey(rawKey);
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), ciphertext]
        .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
        .join('.');
    },
    open(sealed) {
      const [version, iv, tag, ciphertext] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
