// The typed client of the Cloud Platform API. See docs/using-the-api.md, "With the typed client".
export { createPlatformClient, newRequestId, type PlatformClient } from './client.ts';
export { OperationFailedError, OperationTimeoutError, PlatformError, PlatformNetworkError, ProblemError } from './errors.ts';
export { parseJson, stringifyJson } from './json.ts';
export { defaultRetryOptions, isIdempotent, retryStatuses } from './retry.ts';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders } from './webhooks.ts';
export type {
  CallArgs,
  CallInit,
  ItemOf,
  Operation,
  PaginatedOperationId,
  PathParams,
  PlatformClientOptions,
  Problem,
  ProblemFieldError,
  RetryOptions,
  Schemas,
  SuccessBody,
  WaitOptions,
} from './types.ts';
