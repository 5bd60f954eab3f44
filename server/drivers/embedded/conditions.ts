import { StoreRefusal } from './refusals.ts';
import type { StoredVersion } from './rows.ts';

/**
 * S3's conditional writes, checked where the write commits (under the bucket's lock, so that two
 * writers cannot both pass the same condition), and before the body is read, so that a write
 * bound to fail costs no transfer.
 */
export interface WriteCondition {
  /** If-Match: the key's current object has one of these ETags (`*`: any current object). */
  ifMatch?: string;
  /** If-None-Match: the key's current object has none of these ETags (`*`: there is none). */
  ifNoneMatch?: string;
}

/** DeleteObject's conditions, on the version it is about (the key's latest, delete markers included). */
export interface DeleteCondition {
  ifMatch?: string;
  /** x-amz-if-match-last-modified-time, to the second. */
  lastModified?: Date;
  /** x-amz-if-match-size. */
  size?: number;
}

const preconditionFailed = () => new StoreRefusal('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');

/** Whether an If-Match/If-None-Match list names `etag` (quotes and weak markers ignored; `*` names any). */
export function etagListMatches(list: string, etag: string | null): boolean {
  return list
    .split(',')
    .map((item) => item.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
    .some((item) => item === '*' || (etag !== null && item === etag));
}

/** Refuses a write whose condition does not hold against the key's latest version (undefined: none). */
export function assertWriteCondition(condition: WriteCondition | undefined, latest: StoredVersion | null | undefined): void {
  if (!condition) return;
  const current = latest && !latest.delete_marker ? latest : null;
  if (condition.ifNoneMatch !== undefined && current && etagListMatches(condition.ifNoneMatch, current.etag)) throw preconditionFailed();
  if (condition.ifMatch !== undefined) {
    if (!current) throw new StoreRefusal('NoSuchKey', 'The specified key does not exist.');
    if (!etagListMatches(condition.ifMatch, current.etag)) throw preconditionFailed();
  }
}

/**
 * Refuses a delete whose condition does not hold against its target. Nothing to delete is no
 * refusal (the delete does nothing, as S3's); a delete marker has no ETag and matches only `*`.
 */
export function assertDeleteCondition(condition: DeleteCondition | undefined, target: StoredVersion | null | undefined): void {
  if (!condition || !target) return;
  if (condition.ifMatch !== undefined && condition.ifMatch.trim() !== '*') {
    if (target.delete_marker || !etagListMatches(condition.ifMatch, target.etag)) throw preconditionFailed();
  }
  if (condition.lastModified !== undefined) {
    const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
    if (seconds(condition.lastModified) !== seconds(target.last_modified)) throw preconditionFailed();
  }
  if (condition.size !== undefined && (target.delete_marker || condition.size !== target.size_bytes)) throw preconditionFailed();
}
