import { createHash } from 'node:crypto';
import { CHECKSUM_ALGORITHMS, runningChecksum } from '../checksums.ts';
import { S3Error } from './errors.ts';
import { smallBody, type S3Request } from './request.ts';

/**
 * The small XML body of a configuration request (CORS, lifecycle, encryption, object lock,
 * retention, legal hold), checked against what the client said of it: its signed SHA-256, its
 * Content-MD5 and any `x-amz-checksum-*` header (the SDK sends one). A body that does not match
 * is refused, never applied.
 */
export async function checkedBody(request: S3Request, limit = 256 * 1024): Promise<string> {
  const raw = await smallBody(request, limit);
  const header = (name: string) => {
    const value = request.req.headers[name];
    return Array.isArray(value) ? value.join(',') : value;
  };
  const md5 = header('content-md5');
  if (md5 !== undefined && createHash('md5').update(raw).digest('base64') !== md5.trim())
    throw new S3Error('BadDigest', 400, 'The Content-MD5 you specified did not match what we received.');
  if (/^[0-9a-f]{64}$/.test(request.signed.payloadHash) && createHash('sha256').update(raw).digest('hex') !== request.signed.payloadHash)
    throw new S3Error('XAmzContentSHA256Mismatch', 400, 'The provided x-amz-content-sha256 header does not match what was computed.');
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const given = header(`x-amz-checksum-${algorithm}`);
    if (given === undefined) continue;
    const checksum = runningChecksum(algorithm);
    checksum.update(raw);
    if (checksum.digest() !== given.trim())
      throw new S3Error('BadDigest', 400, `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
  }
  return raw.toString('utf8');
}
