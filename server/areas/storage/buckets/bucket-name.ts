import { fieldInvalid } from '../../../core/errors.ts';
import { contractDocument } from '../../../core/contract-document.ts';

/**
 * The contract's rule for a bucket name (BucketCreateRequest.name), read from the contract itself:
 * the API's request validation applies it to createBucket, and this applies the same rule where a
 * bucket is named through another door (S3's CreateBucket), so that the two can never differ.
 */
const rule = (
  contractDocument() as {
    components: { schemas: { BucketCreateRequest: { properties: { name: { minLength: number; maxLength: number; pattern: string } } } } };
  }
).components.schemas.BucketCreateRequest.properties.name;
const pattern = new RegExp(rule.pattern, 'u');

/** Refuses a name the contract does not allow, as the API's validation would (`400 validation_failed` on `/name`). */
export function assertBucketName(name: string): void {
  const length = [...name].length;
  if (length < rule.minLength || length > rule.maxLength || !pattern.test(name))
    throw fieldInvalid('/name', `must be ${rule.minLength} to ${rule.maxLength} characters matching ${rule.pattern}`);
}
