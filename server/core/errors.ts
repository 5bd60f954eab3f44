import type { components } from '../../generated/openapi.ts';

export type FieldError = components['schemas']['ProblemFieldError'];

/**
 * The kinds of refusal the rules of the platform know. Services throw them without knowing HTTP;
 * the HTTP layer gives each kind its status in one place (`problemOf` in http/errors.ts).
 */
export type RefusalKind = 'invalid' | 'forbidden' | 'not_found' | 'conflict' | 'unprocessable' | 'unavailable';

/** A request the rules refuse: a stable `code`, a title, a detail for people, the failing fields. */
export class DomainError extends Error {
  readonly kind: RefusalKind;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly fieldErrors?: FieldError[];

  constructor(kind: RefusalKind, code: string, title: string, detail: string, fieldErrors?: FieldError[]) {
    super(`${code}: ${detail}`);
    this.kind = kind;
    this.code = code;
    this.title = title;
    this.detail = detail;
    this.fieldErrors = fieldErrors;
  }
}

/** The most entries a problem's `errors` lists (the contract's `Problem.errors.maxItems`). */
export const MAX_FIELD_ERRORS = 50;

export const validationFailed = (errors: FieldError[]) =>
  new DomainError(
    'invalid',
    'validation_failed',
    'Request validation failed',
    errors.length <= MAX_FIELD_ERRORS
      ? `The request has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}; see errors.`
      : `The request has ${errors.length} invalid fields; errors lists the first ${MAX_FIELD_ERRORS}.`,
    errors,
  );

export const fieldInvalid = (pointer: string, detail: string) => validationFailed([{ pointer, detail }]);

export const invalid = (code: string, title: string, detail: string, errors?: FieldError[]) =>
  new DomainError('invalid', code, title, detail, errors);

export const invalidCursor = () =>
  invalid(
    'invalid_cursor',
    'Invalid cursor',
    'The cursor was not issued by this list; pass the next_cursor of the previous page unchanged.',
    [{ pointer: '/query/cursor', detail: 'not a cursor issued by this list' }],
  );

export const forbidden = (detail: string) => new DomainError('forbidden', 'forbidden', 'Permission denied', detail);

export const notFound = (detail = 'No such resource in this organization.') =>
  new DomainError('not_found', 'not_found', 'Resource not found', detail);

export const conflict = (code: string, title: string, detail: string) => new DomainError('conflict', code, title, detail);

export const unprocessable = (code: string, title: string, detail: string, errors?: FieldError[]) =>
  new DomainError('unprocessable', code, title, detail, errors);

export const invalidReference = (errors: FieldError[]) =>
  unprocessable(
    'invalid_reference',
    'Invalid reference',
    `The request refers to ${errors.length === 1 ? 'something that does' : 'things that do'} not exist here; see errors.`,
    errors,
  );

export const spendBudgetExceeded = () =>
  conflict(
    'spend_budget_exceeded',
    'Spend budget exceeded',
    "The organization's month-to-date spend has reached its spend budget; raise or clear the budget to create billable resources.",
  );
