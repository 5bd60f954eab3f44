// The sealing of object bytes at rest: what is written can be read back whole or by any range,
// and a blob that was altered, reordered or cut short, or a customer key that is not the one it
// was written with, fails rather than giving wrong bytes.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { describe, expect, test } from 'vitest';
import {
  CHUNK_BYTES,
  WrongCustomerKey,
  createObjectKeyring,
  openRange,
  sealedLength,
  sealingTransform,
} from '../../../../../server/drivers/embedded/sealing.ts';

const keyring = createObjectKeyring(randomBytes(32));

async function seal(plain: Buffer, dataKey: Buffer): Promise<Buffer> {
  // Fed in uneven pieces, as a socket delivers them.
  const pieces: Buffer[] = [];
  for (let at = 0; at < plain.length; at += 7_777) pieces.push(plain.subarray(at, at + 7_777));
  return buffer(Readable.from(pieces).pipe(sealingTransform(dataKey)));
}

async function open(sealed: Buffer, dataKey: Buffer, plainSize: number, start: number, end: number): Promise<Buffer> {
  const { fileStart, fileEnd, open } = openRange(dataKey, plainSize, start, end);
  return buffer(Readable.from([sealed.subarray(fileStart, fileEnd + 1)]).pipe(open));
}

describe('sealed blobs', () => {
  for (const size of [1, 13, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 555]) {
    test(`${size} bytes: sealed, not plain on disk, and every range opens to the same bytes`, async () => {
      const plain = randomBytes(size);
      const { dataKey } = keyring.newDataKey({ by: 'platform' });
      const sealed = await seal(plain, dataKey);
      expect(sealed.length).toBe(sealedLength(size));
      // The plain bytes are nowhere in the file. A run of fewer than 8 bytes turns up in any file of
      // random-looking bytes by chance (a single byte almost always does), so shorter ones are not looked for.
      if (size >= 8) expect(sealed.includes(plain.subarray(0, Math.min(size, 32)))).toBe(false);
      const ranges: Array<[number, number]> = [
        [0, size - 1],
        [size - 1, size - 1],
        [Math.floor(size / 2), size - 1],
        [Math.max(0, CHUNK_BYTES - 3), Math.min(size - 1, CHUNK_BYTES + 2)],
      ];
      for (const [start, end] of ranges)
        expect((await open(sealed, dataKey, size, start, end)).equals(plain.subarray(start, end + 1))).toBe(true);
    });
  }

  test('an altered byte, swapped chunks or a blob cut at a chunk boundary fail to open', async () => {
    const size = 3 * CHUNK_BYTES;
    const plain = randomBytes(size);
    const { dataKey } = keyring.newDataKey({ by: 'platform' });
    const sealed = await seal(plain, dataKey);

    const altered = Buffer.from(sealed);
    altered[CHUNK_BYTES + 100]! ^= 1;
    await expect(open(altered, dataKey, size, 0, size - 1)).rejects.toThrow();

    const chunk = CHUNK_BYTES + 16;
    const swapped = Buffer.concat([sealed.subarray(chunk, 2 * chunk), sealed.subarray(0, chunk), sealed.subarray(2 * chunk)]);
    await expect(open(swapped, dataKey, size, 0, size - 1)).rejects.toThrow();

    // Two whole chunks presented as the whole blob: the second is not marked last.
    await expect(open(sealed.subarray(0, 2 * chunk), dataKey, 2 * CHUNK_BYTES, 0, 2 * CHUNK_BYTES - 1)).rejects.toThrow();
  });

  test('a data key wrapped by a customer key opens only with that key', () => {
    const customer = randomBytes(32);
    const { dataKey, sealing } = keyring.newDataKey({ by: 'customer', key: customer });
    expect(sealing.by).toBe('customer');
    expect(keyring.dataKeyOf(sealing, customer).equals(dataKey)).toBe(true);
    expect(() => keyring.dataKeyOf(sealing, randomBytes(32))).toThrow(WrongCustomerKey);
    expect(() => keyring.dataKeyOf(sealing, undefined)).toThrow(WrongCustomerKey);
    // Relabelled as the platform's, it does not open either.
    expect(() => keyring.dataKeyOf({ ...sealing, by: 'platform' }, undefined)).toThrow();
  });

  test("another store key does not open the platform's wrapped keys", () => {
    const { sealing } = keyring.newDataKey({ by: 'platform' });
    expect(() => createObjectKeyring(randomBytes(32)).dataKeyOf(sealing, undefined)).toThrow();
  });
});
