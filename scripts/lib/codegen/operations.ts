/**
 * The operations module: for every operationId, its route (method, path, required scope,
 * success statuses) and the types of a handler that serves it. A handler's request holds the
 * typed path, query, headers and body of the operation; its response is a union of
 * `{status, body}` exactly as the contract lists them, so returning a status the contract does
 * not declare for that operation, or a body of the wrong shape, does not compile.
 */

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
}

interface OperationObject {
  operationId: string;
  summary?: string;
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { required?: boolean; content: Record<string, unknown> };
  responses: Record<string, { $ref?: string; content?: Record<string, unknown> }>;
  'x-required-scope'?: string;
  security?: unknown[];
  deprecated?: boolean;
  'x-deprecated-at'?: string;
  'x-sunset'?: string;
}

interface Document {
  paths: Record<string, Record<string, unknown> & { parameters?: Array<Parameter | { $ref: string }> }>;
  components: { parameters?: Record<string, Parameter>; responses?: Record<string, { content?: Record<string, unknown> }> };
}

export interface OperationInfo {
  operationId: string;
  method: (typeof HTTP_METHODS)[number];
  path: string;
  summary: string;
  scope: 'read' | 'write' | 'none';
  parameters: Parameter[];
  hasBody: boolean;
  bodyRequired: boolean;
  responses: Array<{ status: number; mediaType: string | undefined }>;
  /** For a deprecated operation: when it was deprecated and when it may be removed (YYYY-MM-DD). */
  deprecation?: { deprecatedAt: string; sunset: string };
}

/** Every operation of the document, in the order of its paths. */
export function collectOperations(document: Document): OperationInfo[] {
  const resolveParameter = (parameter: Parameter | { $ref: string }): Parameter =>
    '$ref' in parameter ? document.components.parameters![parameter.$ref.split('/').pop()!]! : parameter;
  const operations: OperationInfo[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method] as OperationObject | undefined;
      if (!operation) continue;
      const scope = operation['x-required-scope'];
      if (scope !== 'read' && scope !== 'write' && scope !== 'none')
        throw new Error(`${operation.operationId}: x-required-scope must be read, write or none`);
      // `none` only where the contract itself takes no credential (`security: []`), and the reverse.
      const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
      if ((scope === 'none') !== isPublic)
        throw new Error(`${operation.operationId}: x-required-scope none goes with security: [] and only with it`);
      const responses = Object.entries(operation.responses).map(([status, response]) => {
        const resolved = response.$ref ? document.components.responses![response.$ref.split('/').pop()!]! : response;
        return { status: Number(status), mediaType: Object.keys(resolved.content ?? {})[0] };
      });
      let deprecation: OperationInfo['deprecation'];
      if (operation.deprecated === true) {
        const [deprecatedAt, sunset] = [operation['x-deprecated-at'], operation['x-sunset']];
        const isDate = (value: unknown): value is string => typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value);
        if (!isDate(deprecatedAt) || !isDate(sunset))
          throw new Error(`${operation.operationId}: a deprecated operation needs x-deprecated-at and x-sunset dates (YYYY-MM-DD)`);
        deprecation = { deprecatedAt, sunset };
      }
      operations.push({
        operationId: operation.operationId,
        method,
        path,
        summary: operation.summary ?? '',
        scope,
        parameters: [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(resolveParameter),
        hasBody: operation.requestBody !== undefined,
        bodyRequired: operation.requestBody?.required === true,
        responses,
        deprecation,
      });
    }
  }
  return operations;
}

const pascal = (operationId: string) => operationId[0]!.toUpperCase() + operationId.slice(1);

export function generateOperationsModule(document: Document): string {
  const operations = collectOperations(document);
  const out: string[] = [];
  out.push(`import type { operations } from './openapi.ts';`, '');
  out.push(
    '/** Headers a handler may add to its response (the server adds request id, rate limit and CORS headers). */',
    'export type ResponseHeaders = Record<string, string>;',
    '',
    'export interface OperationRoute {',
    "  readonly method: 'get' | 'put' | 'post' | 'delete' | 'patch';",
    '  /** The OpenAPI path template. */',
    '  readonly path: string;',
    '  /** The API key scope the operation requires: `read` for GET, `write` otherwise; `none`: no credential (health probes). */',
    "  readonly scope: 'read' | 'write' | 'none';",
    '  /** Whether it takes a JSON request body: `required`, `optional` or `none`. */',
    "  readonly requestBody: 'required' | 'optional' | 'none';",
    '  /** Whether it takes an `Idempotency-Key` header. */',
    '  readonly idempotencyKey: boolean;',
    '  /** Whether it is a list that pages with `limit` and `cursor`. */',
    '  readonly paginated: boolean;',
    '  /** A deprecated operation: when it was deprecated and when it may be removed (YYYY-MM-DD); its answers say so. */',
    '  readonly deprecation?: { readonly deprecatedAt: string; readonly sunset: string };',
    '}',
    '',
    '/** Every operation of the contract: operationId → route. */',
    'export const operationRoutes = {',
  );
  for (const operation of operations) {
    const queryNames = operation.parameters.filter((parameter) => parameter.in === 'query').map(({ name }) => name);
    out.push(
      `  ${operation.operationId}: {`,
      `    method: '${operation.method}',`,
      `    path: '${operation.path}',`,
      `    scope: '${operation.scope}',`,
      `    requestBody: '${operation.hasBody ? (operation.bodyRequired ? 'required' : 'optional') : 'none'}',`,
      `    idempotencyKey: ${operation.parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key')},`,
      `    paginated: ${queryNames.includes('cursor')},`,
      ...(operation.deprecation
        ? [`    deprecation: { deprecatedAt: '${operation.deprecation.deprecatedAt}', sunset: '${operation.deprecation.sunset}' },`]
        : []),
      '  },',
    );
  }
  out.push('} as const satisfies Record<string, OperationRoute>;', '', 'export type OperationId = keyof typeof operationRoutes;', '');

  for (const operation of operations) {
    const name = pascal(operation.operationId);
    const op = `operations['${operation.operationId}']`;
    const has = (location: Parameter['in']) => operation.parameters.some((parameter) => parameter.in === location);
    out.push(`/** ${operation.method.toUpperCase()} ${operation.path}: ${operation.summary} */`);
    out.push(`export interface ${name}Request {`);
    out.push(`  path: ${has('path') ? `${op}['parameters']['path']` : 'Record<string, never>'};`);
    out.push(`  query: ${has('query') ? `NonNullable<${op}['parameters']['query']>` : 'Record<string, never>'};`);
    out.push(`  headers: ${has('header') ? `NonNullable<${op}['parameters']['header']>` : 'Record<string, never>'};`);
    if (operation.hasBody) {
      const body = `NonNullable<${op}['requestBody']>['content']['application/json']`;
      out.push(`  body: ${operation.bodyRequired ? body : `${body} | undefined`};`);
    } else {
      out.push('  body: undefined;');
    }
    out.push('}', '');
    out.push(`export type ${name}Response =`);
    for (const { status, mediaType } of operation.responses) {
      const body = mediaType ? `${op}['responses'][${status}]['content']['${mediaType}']` : 'undefined';
      out.push(`  | { status: ${status}; body: ${body}; headers?: ResponseHeaders }`);
    }
    out.push(';', '');
    out.push(
      `export type ${name}Success = Extract<${name}Response, { status: ${operation.responses
        .filter(({ status }) => status < 300)
        .map(({ status }) => status)
        .join(' | ')} }>;`,
    );
    out.push(`export type ${name}Handler<Context> = (request: ${name}Request, context: Context) => Promise<${name}Response>;`, '');
  }

  out.push('/** Request, response and success types of every operation, by operationId. */', 'export interface OperationTypes {');
  for (const operation of operations) {
    const name = pascal(operation.operationId);
    out.push(`  ${operation.operationId}: { request: ${name}Request; response: ${name}Response; success: ${name}Success };`);
  }
  out.push('}', '');
  out.push(
    '/** One handler for every operation: a missing or mistyped handler does not compile. */',
    'export interface OperationHandlers<Context> {',
  );
  for (const operation of operations) {
    out.push(`  ${operation.operationId}: ${pascal(operation.operationId)}Handler<Context>;`);
  }
  out.push('}', '');
  return out.join('\n');
}
