import { createHash, type Hash } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * The checksums S3 clients send (`x-amz-checksum-<algorithm>`, in headers or aws-chunked
 * trailers): CRC32 (zlib's), CRC32C and CRC64NVME (tables below: no native implementation in
 * Node), SHA1 and SHA256. Each is computed incrementally over a stream and reported base64, big
 * endian, as S3 reports them.
 */
export const CHECKSUM_ALGORITHMS = ['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

export interface RunningChecksum {
  update(chunk: Buffer): void;
  /** The digest, base64 (as in the `x-amz-checksum-*` headers). */
  digest(): string;
}

export const isChecksumAlgorithm = (name: string): name is ChecksumAlgorithm => (CHECKSUM_ALGORITHMS as readonly string[]).includes(name);

export function runningChecksum(algorithm: ChecksumAlgorithm): RunningChecksum {
  switch (algorithm) {
    case 'crc32': {
      let value = 0;
      return { update: (chunk) => void (value = crc32(chunk, value)), digest: () => uint32Base64(value) };
    }
    case 'crc32c': {
      let value = 0xffffffff;
      return { update: (chunk) => void (value = crc32cUpdate(value, chunk)), digest: () => uint32Base64((value ^ 0xffffffff) >>> 0) };
    }
    case 'crc64nvme':
      return crc64nvme();
    case 'sha1':
    case 'sha256':
      return hashChecksum(createHash(algorithm));
  }
}

function hashChecksum(hash: Hash): RunningChecksum {
  return { update: (chunk) => void hash.update(chunk), digest: () => hash.digest('base64') };
}

function uint32Base64(value: number): string {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value >>> 0);
  return bytes.toString('base64');
}

/** CRC32C (Castagnoli), reflected polynomial 0x82F63B78, slicing-by-1 table. */
const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32cUpdate(crc: number, chunk: Buffer): number {
  let c = crc;
  for (let i = 0; i < chunk.length; i++) c = CRC32C_TABLE[(c ^ chunk[i]!) & 0xff]! ^ (c >>> 8);
  return c >>> 0;
}

/**
 * CRC64/NVME: reflected polynomial 0x9A6C9329AC4BC9B5, initial value and final xor all ones. Kept
 * as two 32-bit halves (BigInt per byte would be far too slow for large objects).
 */
const CRC64_TABLE = (() => {
  const hi = new Uint32Array(256);
  const lo = new Uint32Array(256);
  const polyHi = 0x9a6c9329;
  const polyLo = 0xac4bc9b5;
  for (let n = 0; n < 256; n++) {
    let h = 0;
    let l = n;
    for (let k = 0; k < 8; k++) {
      const carry = l & 1;
      l = ((l >>> 1) | ((h & 1) << 31)) >>> 0;
      h = h >>> 1;
      if (carry) {
        h = (h ^ polyHi) >>> 0;
        l = (l ^ polyLo) >>> 0;
      }
    }
    hi[n] = h;
    lo[n] = l;
  }
  return { hi, lo };
})();

function crc64nvme(): RunningChecksum {
  let h = 0xffffffff;
  let l = 0xffffffff;
  return {
    update(chunk) {
      const { hi, lo } = CRC64_TABLE;
      for (let i = 0; i < chunk.length; i++) {
        const index = (l ^ chunk[i]!) & 0xff;
        // (crc >>> 8) ^ table[index], on the two halves.
        const shiftedLo = ((l >>> 8) | ((h & 0xff) << 24)) >>> 0;
        const shiftedHi = h >>> 8;
        l = (shiftedLo ^ lo[index]!) >>> 0;
        h = (shiftedHi ^ hi[index]!) >>> 0;
      }
    },
    digest() {
      const bytes = Buffer.alloc(8);
      bytes.writeUInt32BE((h ^ 0xffffffff) >>> 0, 0);
      bytes.writeUInt32BE((l ^ 0xffffffff) >>> 0, 4);
      return bytes.toString('base64');
    },
  };
}
