// Identifiers' random bytes come from a pool the system's generator fills 4 KiB at a time
// (server/core/random-ids.ts): each call gets bytes of its own, across refills too, and bytes
// handed out never change afterwards.
import { describe, expect, test } from 'vitest';
import { randomIdBytes } from '../../../server/core/random-ids.ts';

describe('randomIdBytes', () => {
  test('gives each call bytes of its own, of the size asked, across many refills of the pool', () => {
    const seen = new Set<string>();
    const kept: Array<{ bytes: Buffer; copy: string }> = [];
    // 3,000 ids of 16 bytes and 700 of 8: more than ten pools, with refills at uneven offsets.
    for (let index = 0; index < 3_700; index++) {
      const size = index % 5 === 0 ? 8 : 16;
      const bytes = randomIdBytes(size);
      expect(bytes.length).toBe(size);
      const hex = bytes.toString('hex');
      expect(seen.has(hex), `the bytes ${hex} were handed out twice`).toBe(false);
      seen.add(hex);
      if (index % 97 === 0) kept.push({ bytes, copy: hex });
    }
    // The pool is replaced, not refilled in place: what a caller holds stays what it was.
    for (const { bytes, copy } of kept) expect(bytes.toString('hex')).toBe(copy);
  });

  test('the bytes are not all alike (they come from the generator, not a zeroed pool)', () => {
    const bytes = Buffer.concat(Array.from({ length: 64 }, () => randomIdBytes(16)));
    const distinct = new Set(bytes).size;
    // 1,024 random bytes take well over 200 of the 256 values; a zeroed or constant pool takes one.
    expect(distinct).toBeGreaterThan(200);
  });

  test('refuses a size no identifier needs', () => {
    expect(() => randomIdBytes(5_000)).toThrow(RangeError);
  });
});
