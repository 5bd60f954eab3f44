// The store's hashing of upload bytes (server/drivers/embedded/hashing.ts): large bodies are hashed
// by a worker thread from shared batch buffers that are used again once hashed. Many uploads at
// once take more batches than are kept between uses; every digest must still be exactly that of
// its own bytes, in the first round and in the next, which reuses the kept batches.
import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { hashing, OFF_THREAD_FROM_BYTES } from '../../../../server/drivers/embedded/hashing.ts';

/** Pushes `body` through a hashing transform in `pieces`, reading its output, and returns the digests. */
async function digestsOf(body: Buffer, pieces: number): Promise<{ md5: string; crc32: number; passed: Buffer }> {
  const { transform, result } = hashing(['md5', 'crc32'], body.length);
  const passed: Buffer[] = [];
  transform.on('data', (chunk: Buffer) => passed.push(chunk));
  const step = Math.ceil(body.length / pieces);
  for (let offset = 0; offset < body.length; offset += step) transform.write(body.subarray(offset, offset + step));
  transform.end();
  const digests = await result();
  return { md5: digests.get('md5')!.toString('hex'), crc32: digests.get('crc32')!.readUInt32BE(0), passed: Buffer.concat(passed) };
}

describe('hashing off the request thread', () => {
  it('gives each of many concurrent uploads the digests of its own bytes, round after round', async () => {
    expect(OFF_THREAD_FROM_BYTES).toBeLessThan(600 * 1024);
    for (let round = 0; round < 3; round++) {
      // 40 bodies of about 600 KiB, written at once: about 100 batches in flight, more than are kept.
      const bodies = Array.from({ length: 40 }, (_, index) => randomBytes(600 * 1024 + index * 977));
      const digests = await Promise.all(bodies.map((body, index) => digestsOf(body, 1 + (index % 7))));
      for (const [index, body] of bodies.entries()) {
        expect(digests[index]!.md5, `round ${round}, body ${index}`).toBe(createHash('md5').update(body).digest('hex'));
        expect(digests[index]!.crc32, `round ${round}, body ${index}`).toBe(crc32(body));
        expect(digests[index]!.passed.equals(body), `round ${round}, body ${index}: the bytes pass on unchanged`).toBe(true);
      }
    }
  });
});
