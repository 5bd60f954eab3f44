// What every answer must be: not a 5xx; a status the contract declares for the operation the
// request names (404 or 405 when it names none); a problem document that validates against the
// contract's Problem schema, as application/problem+json; a success body that validates against
// the declared response; no 2xx for a request the contract makes invalid, and no 400 refusing a
// parameter, or JSON, that the contract makes valid (a body may still break rules its schema
// cannot say, such as a CIDR's host bits; 404, 409 and 422 depend on the resources' state).
import type { FuzzCase } from './cases.ts';
import type { FuzzContract, OperationSpec } from './contract.ts';
import { describeErrors, type SchemaCheck } from './schema-check.ts';
import type { Answer, Outcome } from './send.ts';

export type FailureKind =
  | 'server-error'
  | 'no-answer'
  | 'undeclared-status'
  | 'problem-media-type'
  | 'problem-schema'
  | 'success-media-type'
  | 'success-schema'
  | 'accepted-invalid'
  | 'refused-valid'
  | 'unresponsive';

export interface Failure {
  kind: FailureKind;
  /** What the failures of one cause share (kind, status, code, the schema rule broken, the mutation kind). */
  signature: string;
  detail: string;
}

const PROBLEM = { $ref: '#/components/schemas/Problem' };

/** The operation a method and request target name, as the contract's templates match it. */
export function routeOf(
  contract: FuzzContract,
  method: string,
  target: string,
): { operation: OperationSpec } | { otherMethods: string[] } | undefined {
  const path = target.split('?')[0]!;
  const segments = (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).split('/');
  const otherMethods: string[] = [];
  for (const operation of contract.operations) {
    const template = operation.pathTemplate.split('/');
    if (template.length !== segments.length) continue;
    const matches = template.every((part, index) => (/^\{\w+\}$/.test(part) ? segments[index] !== '' : part === segments[index]));
    if (!matches) continue;
    if (operation.method === method) return { operation };
    otherMethods.push(operation.method);
  }
  return otherMethods.length > 0 ? { otherMethods } : undefined;
}

/** Whether a 400 problem blames a path, query or header parameter, or the JSON syntax. */
function refusesParameterOrJson(problem: { code?: string; errors?: Array<{ pointer?: string }> } | undefined): boolean {
  if (!problem) return false;
  if (problem.code === 'malformed_json' || problem.code === 'invalid_cursor') return true;
  return Array.isArray(problem.errors) && problem.errors.some((error) => /^\/(path|query|header)\//.test(String(error?.pointer)));
}

export class Oracle {
  private readonly contract: FuzzContract;
  private readonly schemas: SchemaCheck;

  constructor(contract: FuzzContract, schemas: SchemaCheck) {
    this.contract = contract;
    this.schemas = schemas;
  }

  judge(fuzzCase: FuzzCase, outcome: Outcome): Failure[] {
    const mutation = fuzzCase.mutation.kind;
    if ('error' in outcome) return [{ kind: 'no-answer', signature: `no answer ← ${mutation}`, detail: outcome.error }];
    const { answer } = outcome;
    const failures: Failure[] = [];
    const route = routeOf(this.contract, fuzzCase.request.method, fuzzCase.request.target);
    const operation = route && 'operation' in route ? route.operation : undefined;
    const problem = answer.status >= 400 ? this.checkProblem(answer, failures, mutation) : undefined;
    const code = problem?.code ?? '-';

    if (answer.status >= 500) {
      failures.push({ kind: 'server-error', signature: `${answer.status} ${code} ← ${mutation}`, detail: `answered ${answer.status}` });
    }
    // A path that names no operation: 404 or 405, or what is answered before any routing (a
    // request that is not valid HTTP, an oversized head, the rate limit, an outage).
    const declared = operation
      ? [...operation.responses.keys()]
      : [404, 405, 429, 431, 503, ...(code === 'malformed_request' ? [400] : [])];
    if (!declared.includes(answer.status)) {
      const where = operation ? `${operation.operationId} declares ${declared.join(', ')}` : 'the path names no operation: 404 or 405';
      failures.push({
        kind: 'undeclared-status',
        signature: `${answer.status} ${code} ← ${mutation}`,
        detail: `answered ${answer.status}; ${where}`,
      });
    }
    if (answer.status >= 200 && answer.status < 300) {
      if (operation) this.checkSuccess(operation, answer, failures, mutation);
      if (fuzzCase.mutation.mustRefuse === true) {
        failures.push({
          kind: 'accepted-invalid',
          signature: `${answer.status} ← ${mutation}`,
          detail: `answered ${answer.status} to a request the contract makes invalid (${fuzzCase.mutation.description})`,
        });
      }
    }
    if (answer.status === 400 && fuzzCase.mutation.mustRefuse === false && refusesParameterOrJson(problem)) {
      failures.push({
        kind: 'refused-valid',
        signature: `400 ${code} ← ${mutation}`,
        detail: `answered 400 to a request the contract makes valid (${fuzzCase.mutation.description})`,
      });
    }
    return failures;
  }

  private checkProblem(
    answer: Answer,
    failures: Failure[],
    mutation: string,
  ): { code?: string; errors?: Array<{ pointer?: string }> } | undefined {
    const mediaType = answer.headers['content-type'] ?? '';
    if (!/^application\/problem\+json(;|$)/.test(mediaType)) {
      failures.push({
        kind: 'problem-media-type',
        signature: `${answer.status} as ${mediaType || 'no content type'} ← ${mutation}`,
        detail: `an error answer of type ${JSON.stringify(mediaType)}, not application/problem+json`,
      });
      // Not a problem document at all: its fields are not worth a second failure.
      return undefined;
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      failures.push({
        kind: 'problem-schema',
        signature: `${answer.status} body not JSON ← ${mutation}`,
        detail: 'the error body is not JSON',
      });
      return undefined;
    }
    const verdict = this.schemas.check(PROBLEM, body);
    const problem = (body ?? {}) as { code?: string; status?: unknown; request_id?: unknown; errors?: Array<{ pointer?: string }> };
    if (!verdict.valid) {
      const rules = [...new Set(verdict.errors.map((error) => `${error.instancePath.replace(/\/\d+/g, '/*')} ${error.keyword}`))]
        .sort()
        .join(', ');
      failures.push({
        kind: 'problem-schema',
        signature: `${answer.status} ${problem.code ?? '-'}: ${rules} ← ${mutation}`,
        detail: `the problem breaks Problem: ${describeErrors(verdict.errors)}`,
      });
    }
    if (problem.status !== answer.status) {
      failures.push({
        kind: 'problem-schema',
        signature: `${answer.status} ${problem.code ?? '-'}: status field differs ← ${mutation}`,
        detail: `problem status ${String(problem.status)}, HTTP status ${answer.status}`,
      });
    }
    if (problem.request_id !== answer.headers['x-request-id']) {
      failures.push({
        kind: 'problem-schema',
        signature: `${answer.status} ${problem.code ?? '-'}: request_id differs from X-Request-Id ← ${mutation}`,
        detail: `request_id ${String(problem.request_id)}, X-Request-Id ${String(answer.headers['x-request-id'])}`,
      });
    }
    return problem;
  }

  private checkSuccess(operation: OperationSpec, answer: Answer, failures: Failure[], mutation: string): void {
    const declared = operation.responses.get(answer.status);
    if (!declared) return;
    if (!declared.schema) {
      if (answer.body.length > 0)
        failures.push({
          kind: 'success-schema',
          signature: `${answer.status} with a body ← ${mutation}`,
          detail: `${answer.status} declares no body, got ${answer.body.length} bytes`,
        });
      return;
    }
    const mediaType = answer.headers['content-type'] ?? '';
    if (declared.mediaType && !mediaType.startsWith(declared.mediaType)) {
      failures.push({
        kind: 'success-media-type',
        signature: `${answer.status} as ${mediaType} ← ${mutation}`,
        detail: `declared ${declared.mediaType}, got ${mediaType}`,
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      failures.push({ kind: 'success-schema', signature: `${answer.status} body not JSON ← ${mutation}`, detail: 'the body is not JSON' });
      return;
    }
    const verdict = this.schemas.check(declared.schema, body);
    if (!verdict.valid) {
      const rules = [...new Set(verdict.errors.map((error) => `${error.instancePath.replace(/\/\d+/g, '/*')} ${error.keyword}`))]
        .sort()
        .join(', ');
      failures.push({
        kind: 'success-schema',
        signature: `${operation.operationId} ${answer.status}: ${rules}`,
        detail: describeErrors(verdict.errors),
      });
    }
  }
}
