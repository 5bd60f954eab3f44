/**
 * Code samples of every operation, made from the contract itself: the path and query values are
 * the parameters' examples, the body is the operation's first named request example. Nothing is
 * written by hand per operation, so a sample cannot drift from the contract: the docs page shows
 * them (`x-codeSamples`), and test/docs/samples.system.test.ts runs every curl sample against the mock
 * and type-checks every TypeScript sample against the typed client.
 */

import { arrayOf, objectOf, resolveRef, type Json } from './openapi-json.ts';

export interface CodeSample {
  lang: 'Shell' | 'TypeScript';
  label: 'curl' | 'TypeScript';
  source: string;
}

export interface SampleOperation {
  operationId: string;
  method: string;
  path: string;
  /** The operation takes no credential. */
  public: boolean;
  pathValues: Record<string, unknown>;
  /** Required query parameters with their example values. */
  queryValues: Record<string, unknown>;
  body: unknown;
  /** The success status has no body (204). */
  noContent: boolean;
}

/** The environment every sample reads: the API's address and a credential. */
export const SAMPLE_ENVIRONMENT = ['BASE_URL', 'API_KEY'] as const;

/** The import the TypeScript samples show: the client as a package (see docs/using-the-api.md, "The client as a package"). */
export const CLIENT_IMPORT = "import { createPlatformClient } from '@cloud-platform/client';";

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export function sampleOperations(document: Json): SampleOperation[] {
  const operations: SampleOperation[] = [];
  for (const [path, item] of Object.entries(objectOf(document.paths)).map(([key, value]) => [key, objectOf(value)] as const)) {
    for (const method of METHODS) {
      if (item[method] === undefined) continue;
      const operation = objectOf(item[method]);
      const operationId = String(operation.operationId);
      const parameters = [...arrayOf(item.parameters), ...arrayOf(operation.parameters)].map((parameter) =>
        resolveRef(document, parameter),
      );
      const valueOf = (parameter: Json): unknown => {
        if (parameter.example !== undefined) return parameter.example;
        const first = Object.values(objectOf(parameter.examples))[0];
        if (first) return resolveRef(document, first).value;
        throw new Error(`${operationId}: parameter ${String(parameter.name)} has no example to make a code sample from`);
      };
      const named = (where: string) => parameters.filter((parameter) => parameter.in === where);
      const pathValues = Object.fromEntries(named('path').map((parameter) => [String(parameter.name), valueOf(parameter)]));
      const queryValues = Object.fromEntries(
        named('query')
          .filter((parameter) => parameter.required === true)
          .map((parameter) => [String(parameter.name), valueOf(parameter)]),
      );
      let body: unknown;
      const media = objectOf(objectOf(objectOf(operation.requestBody).content)['application/json']);
      if (operation.requestBody !== undefined) {
        const first = Object.values(objectOf(media.examples))[0];
        if (!first) throw new Error(`${operationId}: the request body has no named example to make a code sample from`);
        body = resolveRef(document, first).value;
      }
      const success = Object.keys(objectOf(operation.responses)).find((status) => status.startsWith('2'));
      operations.push({
        operationId,
        method: method.toUpperCase(),
        path,
        public: Array.isArray(operation.security) && operation.security.length === 0,
        pathValues,
        queryValues,
        body,
        noContent: success === '204',
      });
    }
  }
  return operations;
}

export function codeSamples(operation: SampleOperation): CodeSample[] {
  return [
    { lang: 'Shell', label: 'curl', source: curlSample(operation) },
    { lang: 'TypeScript', label: 'TypeScript', source: typeScriptSample(operation) },
  ];
}

function urlOf(operation: SampleOperation): string {
  const path = operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => encodeURIComponent(String(operation.pathValues[name])));
  const query = new URLSearchParams(Object.entries(operation.queryValues).map(([name, value]) => [name, String(value)])).toString();
  return `$BASE_URL${path}${query ? `?${query}` : ''}`;
}

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

export function curlSample(operation: SampleOperation): string {
  const lines = [`curl -sS -X ${operation.method} "${urlOf(operation)}"`];
  if (!operation.public) lines.push('-H "Authorization: Bearer $API_KEY"');
  if (operation.method === 'POST') lines.push(`-H "Idempotency-Key: $(node -p 'crypto.randomUUID()')"`);
  if (operation.body !== undefined) {
    lines.push(`-H 'Content-Type: application/json'`);
    lines.push(`-d ${shellQuote(JSON.stringify(operation.body, null, 2))}`);
  }
  return lines.join(' \\\n  ');
}

/** A JSON value as a TypeScript literal: identifier keys unquoted, two-space indentation from `indent`. */
function literal(value: unknown, indent: string): string {
  return JSON.stringify(value, null, 2)
    .replace(/^( *)"([A-Za-z_$][\w$]*)":/gm, '$1$2:')
    .split('\n')
    .join(`\n${indent}`);
}

export function typeScriptSample(operation: SampleOperation): string {
  const init: string[] = [];
  const pathValues = Object.fromEntries(Object.entries(operation.pathValues).filter(([name]) => name !== 'org'));
  if (Object.keys(pathValues).length > 0) init.push(`  path: ${literal(pathValues, '  ')},`);
  if (Object.keys(operation.queryValues).length > 0) init.push(`  query: ${literal(operation.queryValues, '  ')},`);
  if (operation.body !== undefined) init.push(`  body: ${literal(operation.body, '  ')},`);
  const args = init.length > 0 ? `, {\n${init.join('\n')}\n}` : '';
  const call = `await client.call('${operation.operationId}'${args});`;
  const org = String(operation.pathValues.org ?? '3f6c1a2e-9b4d-4c7a-8e21-5d0b7f9a1c34');
  return [
    CLIENT_IMPORT,
    '',
    'const client = createPlatformClient({',
    '  baseUrl: process.env.BASE_URL!,',
    `  org: '${org}',`,
    '  credential: process.env.API_KEY!,',
    '});',
    '',
    operation.noContent ? call : `const result = ${call}\nconsole.log(result);`,
  ].join('\n');
}
