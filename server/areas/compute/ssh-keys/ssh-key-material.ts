import { createHash, createPublicKey, type JsonWebKey } from 'node:crypto';

/** A checked OpenSSH public key: its algorithm and SHA-256 fingerprint as `ssh-keygen -l` prints it. */
export interface ParsedSshKey {
  algorithm: string;
  fingerprint: string;
}

/** Why a public key line is refused, as the detail of `400 validation_failed` at /public_key. */
export class SshKeyRejected extends Error {}

const CURVES: Record<string, { curve: string; jwk: string; bytes: number }> = {
  'ecdsa-sha2-nistp256': { curve: 'nistp256', jwk: 'P-256', bytes: 32 },
  'ecdsa-sha2-nistp384': { curve: 'nistp384', jwk: 'P-384', bytes: 48 },
  'ecdsa-sha2-nistp521': { curve: 'nistp521', jwk: 'P-521', bytes: 66 },
};
const ALGORITHMS = ['ssh-ed25519', 'ssh-rsa', ...Object.keys(CURVES)];
const LINE = /^(\S+) ([A-Za-z0-9+/]+={0,2})(?: [^\x00-\x1F]{1,1024})?$/;

/**
 * Reads one line of an OpenSSH `.pub` file: the algorithm, the base64 key blob (in the SSH wire
 * format: length-prefixed strings and integers) and an optional comment. The blob must decode to
 * a public key of the named algorithm, which Node's crypto must accept as one; RSA keys need at
 * least 2048 bits.
 */
export function parseSshPublicKey(line: string): ParsedSshKey {
  const match = LINE.exec(line);
  if (!match || !ALGORITHMS.includes(match[1]!)) {
    throw new SshKeyRejected('must be one OpenSSH public key line of type ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp256/384/521');
  }
  const algorithm = match[1]!;
  const blob = Buffer.from(match[2]!, 'base64');
  const undecodable = new SshKeyRejected(`the key data does not decode to an ${algorithm} public key`);
  if (blob.toString('base64').replace(/=+$/, '') !== match[2]!.replace(/=+$/, '')) throw undecodable;

  const reader = new WireReader(blob, undecodable);
  if (reader.string().toString('latin1') !== algorithm) throw undecodable;
  let jwk: JsonWebKey;
  if (algorithm === 'ssh-ed25519') {
    const key = reader.string();
    if (key.length !== 32) throw undecodable;
    jwk = { kty: 'OKP', crv: 'Ed25519', x: key.toString('base64url') };
  } else if (algorithm === 'ssh-rsa') {
    const exponent = reader.mpint();
    const modulus = reader.mpint();
    if (modulus.length === 0 || exponent.length === 0) throw undecodable;
    const bits = modulus.length * 8 - Math.clz32(modulus[0]!) + 24;
    if (bits < 2048) throw new SshKeyRejected(`RSA keys must have at least 2048 bits; this one has ${bits}`);
    jwk = { kty: 'RSA', n: modulus.toString('base64url'), e: exponent.toString('base64url') };
  } else {
    const curve = CURVES[algorithm]!;
    if (reader.string().toString('latin1') !== curve.curve) throw undecodable;
    const point = reader.string();
    // An uncompressed point: 0x04, then X and Y.
    if (point.length !== 1 + 2 * curve.bytes || point[0] !== 0x04) throw undecodable;
    jwk = {
      kty: 'EC',
      crv: curve.jwk,
      x: point.subarray(1, 1 + curve.bytes).toString('base64url'),
      y: point.subarray(1 + curve.bytes).toString('base64url'),
    };
  }
  if (!reader.done()) throw undecodable;
  try {
    createPublicKey({ key: jwk, format: 'jwk' });
  } catch {
    throw undecodable;
  }
  return { algorithm, fingerprint: `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}` };
}

/** The SSH wire format (RFC 4251): uint32 lengths before strings and multi-precision integers. */
class WireReader {
  private offset = 0;

  private readonly data: Buffer;
  private readonly error: Error;

  constructor(data: Buffer, error: Error) {
    this.data = data;
    this.error = error;
  }

  string(): Buffer {
    if (this.offset + 4 > this.data.length) throw this.error;
    const length = this.data.readUInt32BE(this.offset);
    const start = this.offset + 4;
    if (start + length > this.data.length) throw this.error;
    this.offset = start + length;
    return this.data.subarray(start, start + length);
  }

  /** A positive mpint, without the leading zero that keeps its sign bit clear. */
  mpint(): Buffer {
    const value = this.string();
    if (value.length > 0 && (value[0]! & 0x80) !== 0) throw this.error;
    let start = 0;
    while (start < value.length && value[start] === 0) start++;
    return value.subarray(start);
  }

  done(): boolean {
    return this.offset === this.data.length;
  }
}
