import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable, Transform } from 'node:stream';
import { CHECKSUM_ALGORITHMS, isChecksumAlgorithm, runningChecksum, type ChecksumAlgorithm } from '../checksums.ts';
import { hashing, type NativeDigest } from '../hashing.ts';
import { AwsChunkedDecoder, type ChunkSigning } from './chunked.ts';
import { S3Error, invalidArgument } from './errors.ts';
import { UNSIGNED_PAYLOAD } from './sigv4.ts';
import { stallGuard } from './stall.ts';
import { askForBody } from './unread-body.ts';

/** An upload's body, ready for the store: its length, its decoded bytes, and what checks them. */
export interface UploadBody {
  size: number;
  body: Readable;
  transforms: Transform[];
  /** Whether the client sends the body without waiting for `100 Continue` (so reading it early costs no transfer it would not make). */
  readEarly: boolean;
  /** Once every byte went through: the ETag and the verified checksums, or a BadDigest/mismatch error. */
  digests(): Promise<{ etag: string; checksums: Record<string, string> }>;
}

const STREAMING_SIGNED = new Set(['STREAMING-AWS4-HMAC-SHA256-PAYLOAD', 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER']);
export const STREAMING_UNSIGNED = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';

const header = (request: IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/**
 * Reads how the client sent the body (`x-amz-content-sha256`: a hex digest, UNSIGNED-PAYLOAD, or
 * one of the aws-chunked forms, whose chunk signatures are checked with `signing`) and which
 * checks it asked for (Content-MD5; `x-amz-checksum-<algorithm>` in a header or announced as a
 * trailer by `x-amz-trailer`; `x-amz-sdk-checksum-algorithm` alone asks to compute one).
 */
export function uploadBody(
  request: IncomingMessage,
  response: ServerResponse,
  payloadHash: string,
  signing: ChunkSigning | undefined,
  /** A body that stops coming for this long is ended (RequestTimeout). */
  stallTimeoutMs: number,
  /** Paces the bytes (after the stall guard: a paced body is not a stalled one). */
  pace?: Transform,
): UploadBody {
  const streaming = STREAMING_SIGNED.has(payloadHash) || payloadHash === STREAMING_UNSIGNED;
  let size: number;
  let body: Readable = request;
  let decoder: AwsChunkedDecoder | undefined;
  if (streaming) {
    size = declaredLength(header(request, 'x-amz-decoded-content-length'));
    decoder = new AwsChunkedDecoder(STREAMING_SIGNED.has(payloadHash) ? signing : undefined);
    // A tampered chunk can fail the decoder before the store has started reading it: the store
    // learns of the error when it reads (pipeline reports an errored stream), and this listener
    // keeps it, meanwhile, from being an 'error' event nobody listens to, which ends the process.
    decoder.on('error', () => {});
    body = request.pipe(decoder);
    // pipe() does not pass on a client that went away: the decoder must end too, or the write
    // would wait forever (holding its reservation).
    const decoding = decoder;
    request.on('error', (error) => decoding.destroy(error));
    request.on('close', () => {
      if (!request.complete) decoding.destroy(Object.assign(new Error('the client went away mid-body'), { code: 'ECONNRESET' }));
    });
  } else {
    if (header(request, 'content-length') === undefined)
      throw new S3Error('MissingContentLength', 411, 'You must provide the Content-Length HTTP header.');
    size = declaredLength(header(request, 'content-length'));
    if (payloadHash !== UNSIGNED_PAYLOAD && !/^[0-9a-f]{64}$/.test(payloadHash))
      throw new S3Error('InvalidArgument', 400, 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-… or a SHA256 hex digest');
  }

  // A client waiting for `100 Continue` is asked for the body when the store starts reading it.
  const waitsForContinue = /100-continue/i.test(header(request, 'expect') ?? '');
  if (waitsForContinue) body = askedFor(body, request, response);

  const contentMd5 = header(request, 'content-md5');
  assertContentMd5(contentMd5);
  const trailer = header(request, 'x-amz-trailer')?.trim().toLowerCase();
  // The value the client gave, or { trailer: true } when it comes after the body.
  const expected = new Map<ChecksumAlgorithm, string | { trailer: true }>();
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const given = header(request, `x-amz-checksum-${algorithm}`);
    if (given !== undefined) expected.set(algorithm, given);
  }
  if (trailer !== undefined) {
    const algorithm = trailer.replace(/^x-amz-checksum-/, '');
    if (!isChecksumAlgorithm(algorithm) || !streaming)
      throw invalidArgument(`Unsupported x-amz-trailer: ${trailer}`, 'x-amz-trailer', trailer);
    expected.set(algorithm, { trailer: true });
  }
  const requested = header(request, 'x-amz-sdk-checksum-algorithm')?.toLowerCase();
  const computed = new Set<ChecksumAlgorithm>(expected.keys());
  if (requested !== undefined) {
    if (!isChecksumAlgorithm(requested))
      throw invalidArgument(`Unsupported checksum algorithm: ${requested}`, 'x-amz-sdk-checksum-algorithm', requested);
    computed.add(requested);
  }

  // One pass per algorithm, whoever needs it: MD5 for the ETag (and Content-MD5), SHA-256 for a
  // signed payload and for the sha256 checksum alike. The native ones run off the request's
  // thread for larger bodies (hashing.ts); CRC32C and CRC64NVME have no native implementation here.
  const signedPayload = /^[0-9a-f]{64}$/.test(payloadHash);
  const native = new Set<NativeDigest>(['md5']);
  if (signedPayload) native.add('sha256');
  const scripted = new Map<ChecksumAlgorithm, ReturnType<typeof runningChecksum>>();
  for (const algorithm of computed) {
    if (algorithm === 'crc32' || algorithm === 'sha1' || algorithm === 'sha256') native.add(algorithm);
    else scripted.set(algorithm, runningChecksum(algorithm));
  }
  const hashes = hashing(native, size);
  // First in line: it sees the bytes as they come, before anything else can hold them up.
  const transforms: Transform[] = [stallGuard(stallTimeoutMs), ...(pace ? [pace] : []), hashes.transform];
  if (scripted.size > 0)
    transforms.push(
      new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          for (const checksum of scripted.values()) checksum.update(chunk);
          callback(null, chunk);
        },
      }),
    );

  return {
    size,
    body,
    transforms,
    readEarly: !waitsForContinue,
    async digests() {
      const digests = await hashes.result();
      const md5Digest = digests.get('md5')!;
      if (contentMd5 !== undefined && md5Digest.toString('base64') !== contentMd5.trim())
        throw new S3Error('BadDigest', 400, 'The Content-MD5 you specified did not match what we received.');
      if (signedPayload && digests.get('sha256')!.toString('hex') !== payloadHash)
        throw new S3Error('XAmzContentSHA256Mismatch', 400, 'The provided x-amz-content-sha256 header does not match what was computed.');
      const checksums: Record<string, string> = {};
      for (const algorithm of computed) {
        const value = scripted.get(algorithm)?.digest() ?? digests.get(algorithm as NativeDigest)!.toString('base64');
        const wanted = expected.get(algorithm);
        const fromTrailer = typeof wanted === 'object';
        const given = fromTrailer ? decoder?.trailers.get(`x-amz-checksum-${algorithm}`) : wanted;
        if (fromTrailer && given === undefined)
          throw new S3Error('InvalidRequest', 400, `The x-amz-checksum-${algorithm} trailer announced by x-amz-trailer is missing`);
        if (given !== undefined && given !== value)
          throw new S3Error('BadDigest', 400, `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
        checksums[algorithm] = value;
      }
      return { etag: md5Digest.toString('hex'), checksums };
    },
  };
}

function declaredLength(value: string | undefined): number {
  if (value === undefined) throw new S3Error('MissingContentLength', 411, 'You must provide the Content-Length HTTP header.');
  const size = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(size))
    throw invalidArgument('The content length is not a number', 'Content-Length', value);
  if (size > 5 * 1024 ** 4) throw new S3Error('EntityTooLarge', 400, 'Your proposed upload exceeds the maximum allowed object size.');
  return size;
}

/** The body, read only once the store reads it: then `100 Continue` is sent. */
function askedFor(source: Readable, request: IncomingMessage, response: ServerResponse): Readable {
  return Readable.from(
    (async function* () {
      askForBody(request, response);
      for await (const chunk of source) yield chunk as Buffer;
    })(),
    { objectMode: false },
  );
}

/** A Content-MD5 that cannot be an MD5 (not base64 of 16 bytes) is InvalidDigest, before any byte is read. */
export function assertContentMd5(value: string | undefined): void {
  if (value === undefined) return;
  const trimmed = value.trim();
  if (!/^[A-Za-z0-9+/]{22}==$/.test(trimmed) || Buffer.from(trimmed, 'base64').length !== 16)
    throw new S3Error('InvalidDigest', 400, 'The Content-MD5 you specified is not valid.');
}
