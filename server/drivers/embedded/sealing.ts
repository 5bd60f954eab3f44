import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Encryption at rest of object bytes (SSE-S3 and SSE-C). Each blob (a simple object's bytes, or a
 * multipart upload's part) has a data key of its own, drawn at random and kept only wrapped:
 * under the platform's object key (SSE-S3, derived from the store's secret key) or under the
 * customer's key (SSE-C, never stored). The bytes are sealed in chunks of CHUNK_BYTES with
 * AES-256-GCM: chunk i uses the nonce i (the key is used for one blob only, so a nonce never
 * repeats), and its tag authenticates whether it is the last chunk, so a chunk that is altered,
 * moved or cut off fails to open. A range is read by opening only the chunks it covers.
 */
export const CHUNK_BYTES = 64 * 1024;
const TAG_BYTES = 16;
const SEALED_CHUNK_BYTES = CHUNK_BYTES + TAG_BYTES;
const WRAP_VERSION = 'v1';

/** How a blob's bytes are sealed: by whose key its data key is wrapped, and the wrapped key. */
export interface BlobSealing {
  by: 'platform' | 'customer';
  /** `v1.<iv>.<tag>.<sealed data key>`, base64url. */
  key: string;
}

/** What wraps a new blob's data key, or unwraps an existing one: the platform's key, or the customer's. */
export type WrappingKey = { by: 'platform' } | { by: 'customer'; key: Buffer };

/** The customer's key did not open the data key: another key than the one the object was written with. */
export class WrongCustomerKey extends Error {
  constructor() {
    super('the customer key does not open the object');
  }
}

/** A sealed blob's length on disk for `plain` bytes. */
export function sealedLength(plain: number): number {
  return plain + Math.ceil(plain / CHUNK_BYTES) * TAG_BYTES;
}

function nonce(chunk: number): Buffer {
  const bytes = Buffer.alloc(12);
  bytes.writeBigUInt64BE(BigInt(chunk), 4);
  return bytes;
}

const LAST = Buffer.from([1]);
const NOT_LAST = Buffer.from([0]);

export interface ObjectKeyring {
  /** A new blob's data key and how it is kept. */
  newDataKey(wrapping: WrappingKey): { dataKey: Buffer; sealing: BlobSealing };
  /** The data key of a sealed blob; WrongCustomerKey when the customer's key is not the one it was sealed with. */
  dataKeyOf(sealing: BlobSealing, customerKey: Buffer | undefined): Buffer;
}

/**
 * The keyring of object data keys. The platform's object key is derived from the store's secret
 * key (HKDF, a label of its own): one secret to keep, and a sealed secret never shares a key
 * with object data.
 */
export function createObjectKeyring(storeKey: Buffer): ObjectKeyring {
  const platformKey = Buffer.from(hkdfSync('sha256', storeKey, Buffer.alloc(0), 'cloud-platform object data keys v1', 32));
  const wrappingKeyOf = (by: BlobSealing['by'], customerKey: Buffer | undefined): Buffer => {
    if (by === 'platform') return platformKey;
    if (!customerKey) throw new WrongCustomerKey();
    return customerKey;
  };
  return {
    newDataKey(wrapping) {
      const dataKey = randomBytes(32);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', wrappingKeyOf(wrapping.by, wrapping.by === 'customer' ? wrapping.key : undefined), iv);
      // The kind of wrapping is authenticated with the key: a platform-wrapped key cannot pass for a customer's.
      cipher.setAAD(Buffer.from(wrapping.by));
      const sealed = Buffer.concat([cipher.update(dataKey), cipher.final()]);
      const key = [WRAP_VERSION, ...[iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64url'))].join('.');
      return { dataKey, sealing: { by: wrapping.by, key } };
    },
    dataKeyOf(sealing, customerKey) {
      const [version, iv, tag, sealed] = sealing.key.split('.');
      if (version !== WRAP_VERSION || !iv || !tag || !sealed) throw new Error('not a wrapped data key');
      const decipher = createDecipheriv('aes-256-gcm', wrappingKeyOf(sealing.by, customerKey), Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(sealing.by));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      try {
        return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]);
      } catch (error) {
        if (sealing.by === 'customer') throw new WrongCustomerKey();
        throw error;
      }
    },
  };
}

/** Seals the bytes that pass through (plain in, sealed chunks out). */
export function sealingTransform(dataKey: Buffer): Transform {
  // One chunk is held back until more bytes come: only then is it known not to be the last.
  const pending = Buffer.alloc(CHUNK_BYTES);
  let filled = 0;
  let index = 0;
  const seal = (bytes: Buffer, last: boolean): Buffer => {
    const cipher = createCipheriv('aes-256-gcm', dataKey, nonce(index++));
    cipher.setAAD(last ? LAST : NOT_LAST);
    const sealed = cipher.update(bytes);
    cipher.final();
    return Buffer.concat([sealed, cipher.getAuthTag()]);
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      let offset = 0;
      while (offset < chunk.length) {
        if (filled === CHUNK_BYTES) {
          this.push(seal(pending, false));
          filled = 0;
        }
        const taken = chunk.copy(pending, filled, offset, Math.min(chunk.length, offset + CHUNK_BYTES - filled));
        filled += taken;
        offset += taken;
      }
      callback();
    },
    flush(callback: TransformCallback) {
      if (filled > 0) this.push(seal(pending.subarray(0, filled), true));
      callback();
    },
  });
}

/** Where plain bytes [start, end] of a sealed blob of `plainSize` bytes lie on disk, and what opens them. */
export function openRange(
  dataKey: Buffer,
  plainSize: number,
  start: number,
  end: number,
): { fileStart: number; fileEnd: number; open: Transform } {
  const chunks = Math.ceil(plainSize / CHUNK_BYTES);
  const first = Math.floor(start / CHUNK_BYTES);
  const last = Math.floor(end / CHUNK_BYTES);
  const lastPlain = Math.min((last + 1) * CHUNK_BYTES, plainSize) - last * CHUNK_BYTES;
  const fileStart = first * SEALED_CHUNK_BYTES;
  const fileEnd = last * SEALED_CHUNK_BYTES + lastPlain + TAG_BYTES - 1;
  let skip = start - first * CHUNK_BYTES;
  let wanted = end - start + 1;
  let index = first;
  let held: Buffer[] = [];
  let heldBytes = 0;
  const openChunk = (sealed: Buffer): Buffer => {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, nonce(index));
    decipher.setAAD(index === chunks - 1 ? LAST : NOT_LAST);
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const plain = decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES));
    // Throws on a chunk that was altered, moved or cut short: nothing of it is passed on.
    decipher.final();
    index++;
    return plain;
  };
  const emit = (transform: Transform, plain: Buffer) => {
    const from = Math.min(skip, plain.length);
    skip -= from;
    const piece = plain.subarray(from, from + Math.min(wanted, plain.length - from));
    wanted -= piece.length;
    if (piece.length > 0) transform.push(piece);
  };
  const sizeOf = (chunk: number) => Math.min(CHUNK_BYTES, plainSize - chunk * CHUNK_BYTES) + TAG_BYTES;
  const open = new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      held.push(chunk);
      heldBytes += chunk.length;
      try {
        while (index <= last && heldBytes >= sizeOf(index)) {
          const all = held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes);
          const size = sizeOf(index);
          emit(this, openChunk(all.subarray(0, size)));
          const rest = all.subarray(size);
          held = rest.length > 0 ? [rest] : [];
          heldBytes = rest.length;
        }
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
    flush(callback: TransformCallback) {
      if (index <= last) callback(new Error('a sealed blob ends before its last chunk'));
      else callback();
    },
  });
  return { fileStart, fileEnd, open };
}
