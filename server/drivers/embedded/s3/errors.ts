import {
  CONFLICT_RETRY_AFTER_SECONDS,
  DATABASE_RETRY_AFTER_SECONDS,
  isConcurrencyConflict,
  isDatabaseUnavailable,
} from '../../../db/unavailable.ts';
import { isSweptReservation } from '../quota.ts';
import type { RefusalCode } from '../refusals.ts';

/** An S3 error: S3's code, its HTTP status and a sentence (answered as S3's XML error document). */
export class S3Error extends Error {
  readonly code: string;
  readonly status: number;
  /** Extra elements of the error document (such as the key or the bucket). */
  readonly details: Record<string, string>;
  /** Headers the answer carries (x-amz-delete-marker on a deleted key…). */
  readonly headers: Record<string, string>;

  constructor(code: string, status: number, message: string, details: Record<string, string> = {}, headers: Record<string, string> = {}) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
    this.headers = headers;
  }
}

/** S3's statuses of the store's refusals. */
export const REFUSAL_STATUS: Record<RefusalCode, number> = {
  // What Ceph RGW answers for a write over a bucket or user quota.
  QuotaExceeded: 403,
  NoSuchBucket: 404,
  NoSuchKey: 404,
  NoSuchVersion: 404,
  NoSuchUpload: 404,
  InvalidPart: 400,
  InvalidPartOrder: 400,
  EntityTooSmall: 400,
  IncompleteBody: 400,
  MethodNotAllowed: 405,
  PreconditionFailed: 412,
  BadDigest: 400,
  // A version kept by its object lock (retention, legal hold).
  AccessDenied: 403,
};

export const accessDenied = (message = 'Access Denied') => new S3Error('AccessDenied', 403, message);
export const noSuchBucket = (bucket: string) =>
  new S3Error('NoSuchBucket', 404, 'The specified bucket does not exist', { BucketName: bucket });
export const noSuchKey = (key: string, headers: Record<string, string> = {}) =>
  new S3Error('NoSuchKey', 404, 'The specified key does not exist.', { Key: key }, headers);
export const invalidArgument = (message: string, name?: string, value?: string) =>
  new S3Error('InvalidArgument', 400, message, name ? { ArgumentName: name, ArgumentValue: value ?? '' } : {});
export const notImplemented = (what: string) => new S3Error('NotImplemented', 501, `${what} is not implemented by this endpoint.`);

/**
 * Refuses text the store cannot hold: PostgreSQL's text (and jsonb) holds no NUL, and a key,
 * prefix, marker or id carrying one is refused here, with S3's error, before any query.
 */
export function assertStorable(value: string, argument: string): string {
  if (value.includes('\u0000'))
    throw invalidArgument(`${argument} must not contain the NUL character`, argument, value.replaceAll('\u0000', '%00'));
  return value;
}

/**
 * The S3 answer of a request the platform could not serve because its database is away (stopped,
 * unreachable, frozen past the timeouts, or a write's reservation swept while this process's lock
 * connection was lost: 503 ServiceUnavailable) or its transaction collided with
 * a concurrent one (503 SlowDown); undefined for any other failure. Both say when to retry, as
 * S3's own 503s tell SDKs to back off and try again: nothing was stored or changed.
 */
export function unavailableError(error: unknown): S3Error | undefined {
  if (isConcurrencyConflict(error))
    return new S3Error('SlowDown', 503, 'Please reduce your request rate.', {}, { 'Retry-After': String(CONFLICT_RETRY_AFTER_SECONDS) });
  if (isDatabaseUnavailable(error) || isSweptReservation(error))
    return new S3Error(
      'ServiceUnavailable',
      503,
      'The service is unavailable; nothing was changed. Please retry.',
      {},
      { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
    );
  return undefined;
}
