/**
 * A data-plane request the store refuses, named with S3's error code (the S3 endpoint answers
 * it with S3's status and XML). Nothing was stored when a write is refused.
 */
export type RefusalCode =
  | 'QuotaExceeded'
  | 'NoSuchBucket'
  | 'NoSuchKey'
  | 'NoSuchVersion'
  | 'NoSuchUpload'
  | 'InvalidPart'
  | 'InvalidPartOrder'
  | 'EntityTooSmall'
  | 'IncompleteBody'
  | 'MethodNotAllowed'
  | 'PreconditionFailed'
  | 'BadDigest'
  | 'AccessDenied';

export class StoreRefusal extends Error {
  readonly code: RefusalCode;

  constructor(code: RefusalCode, message: string) {
    super(message);
    this.code = code;
  }
}
