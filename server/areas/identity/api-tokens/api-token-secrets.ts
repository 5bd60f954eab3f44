import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The fixed prefix of our API keys: recognisable by people and by secret scanners. */
export const API_KEY_PREFIX = 'cpk_';
const API_KEY_FORMAT = /^cpk_[A-Za-z0-9_-]{43}$/;

/** A new API key: 32 random bytes after the prefix. Only its hash is ever stored. */
export function generateApiKey(): { secret: string; hash: Buffer } {
  const secret = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { secret, hash: hashApiKey(secret) };
}

/**
 * SHA-256 of the key. A fast hash is right here: the key carries 256 random bits, so there is
 * nothing for a slow password hash to protect, and lookups stay cheap.
 */
export function hashApiKey(secret: string): Buffer {
  // The one-shot form: no Hash object (a stream) made and dropped on every request.
  return hash('sha256', secret, 'buffer');
}

export function looksLikeApiKey(credential: string): boolean {
  return API_KEY_FORMAT.test(credential);
}

/** Compares two hashes in constant time. */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
