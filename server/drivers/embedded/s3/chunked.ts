import { createHash, createHmac, type Hash, type KeyObject } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { S3Error } from './errors.ts';
import { EMPTY_SHA256, sameHex } from './sigv4.ts';

/** What checks the chunk signatures of STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER) bodies. */
export interface ChunkSigning {
  key: KeyObject;
  amzDate: string;
  scope: string;
  /** The request's own signature: the first chunk's "previous" signature. */
  seedSignature: string;
}

const MAX_LINE = 4096;
const CRLF = Buffer.from('\r\n');

const incomplete = (why: string) => new S3Error('IncompleteBody', 400, `The aws-chunked body is malformed: ${why}`);
const chunkSignatureMismatch = () =>
  new S3Error(
    'SignatureDoesNotMatch',
    403,
    'The request signature we calculated does not match the signature you provided (chunk signature).',
  );

/**
 * Decodes a `Content-Encoding: aws-chunked` body as it streams: passes the chunks' data on, checks
 * each chunk's signature when the body is signed (and the trailer's), and collects the trailing
 * headers (`x-amz-checksum-*`), read by `trailers` once the body has ended. Data is passed on
 * before its chunk's signature is checked: it goes to a temporary file that a failure removes.
 */
export class AwsChunkedDecoder extends Transform {
  readonly trailers = new Map<string, string>();
  private readonly signing: ChunkSigning | undefined;
  private previousSignature: string;
  private pending: Buffer = Buffer.alloc(0);
  private state: 'size' | 'data' | 'data-end' | 'trailer' | 'done' = 'size';
  private remaining = 0;
  private chunkSignature = '';
  private chunkHash: Hash | undefined;
  private readonly trailerLines: string[] = [];

  constructor(signing: ChunkSigning | undefined) {
    super();
    this.signing = signing;
    this.previousSignature = signing?.seedSignature ?? '';
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
      this.consume();
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    if (this.state !== 'done') return callback(incomplete('the body ended before its final chunk'));
    callback();
  }

  private line(): string | undefined {
    const end = this.pending.indexOf(CRLF);
    if (end < 0) {
      if (this.pending.length > MAX_LINE) throw incomplete('a chunk header is too long');
      return undefined;
    }
    const text = this.pending.subarray(0, end).toString('latin1');
    this.pending = this.pending.subarray(end + 2);
    return text;
  }

  private consume(): void {
    for (;;) {
      if (this.state === 'size') {
        const header = this.line();
        if (header === undefined) return;
        const [sizeText, ...extensions] = header.split(';');
        if (!/^[0-9a-fA-F]{1,16}$/.test(sizeText ?? '')) throw incomplete('a chunk size is not hexadecimal');
        this.remaining = parseInt(sizeText!, 16);
        const signature = extensions.find((part) => part.startsWith('chunk-signature='));
        if (this.signing) {
          if (!signature) throw incomplete('a chunk of a signed body has no chunk-signature');
          this.chunkSignature = signature.slice('chunk-signature='.length);
          this.chunkHash = createHash('sha256');
        }
        if (this.remaining === 0) {
          this.verifyChunk();
          this.state = 'trailer';
        } else {
          this.state = 'data';
        }
      } else if (this.state === 'data') {
        if (this.pending.length === 0) return;
        const take = Math.min(this.remaining, this.pending.length);
        const data = this.pending.subarray(0, take);
        this.pending = this.pending.subarray(take);
        this.remaining -= take;
        this.chunkHash?.update(data);
        this.push(data);
        if (this.remaining === 0) this.state = 'data-end';
      } else if (this.state === 'data-end') {
        if (this.pending.length < 2) return;
        if (this.pending[0] !== 0x0d || this.pending[1] !== 0x0a) throw incomplete('a chunk is longer than its size');
        this.pending = this.pending.subarray(2);
        this.verifyChunk();
        this.state = 'size';
      } else if (this.state === 'trailer') {
        const line = this.line();
        if (line === undefined) return;
        if (line === '') {
          this.state = 'done';
          continue;
        }
        const at = line.indexOf(':');
        if (at < 0) throw incomplete('a trailing header has no value');
        const name = line.slice(0, at).trim().toLowerCase();
        const value = line.slice(at + 1).trim();
        if (name === 'x-amz-trailer-signature') this.verifyTrailer(value);
        else {
          this.trailers.set(name, value);
          this.trailerLines.push(`${name}:${value}`);
        }
      } else {
        // Whatever follows the end of the body is ignored, as S3 does.
        this.pending = Buffer.alloc(0);
        return;
      }
    }
  }

  private verifyChunk(): void {
    if (!this.signing || !this.chunkHash) return;
    const stringToSign = [
      'AWS4-HMAC-SHA256-PAYLOAD',
      this.signing.amzDate,
      this.signing.scope,
      this.previousSignature,
      EMPTY_SHA256,
      this.chunkHash.digest('hex'),
    ].join('\n');
    const expected = createHmac('sha256', this.signing.key).update(stringToSign).digest();
    if (!sameHex(expected, this.chunkSignature)) throw chunkSignatureMismatch();
    this.previousSignature = this.chunkSignature;
    this.chunkHash = undefined;
  }

  private verifyTrailer(signature: string): void {
    if (!this.signing) return;
    const trailerText = this.trailerLines.map((line) => `${line}\n`).join('');
    const stringToSign = [
      'AWS4-HMAC-SHA256-TRAILER',
      this.signing.amzDate,
      this.signing.scope,
      this.previousSignature,
      createHash('sha256').update(trailerText).digest('hex'),
    ].join('\n');
    const expected = createHmac('sha256', this.signing.key).update(stringToSign).digest();
    if (!sameHex(expected, signature)) throw chunkSignatureMismatch();
  }
}
