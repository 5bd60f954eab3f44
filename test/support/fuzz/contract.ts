// The contract as the fuzzer sees it: every operation with its parameters, request body and
// declared responses, read from the bundle without losing integers (an int64 bound such as
// 9223372036854775807 stays exact, so "one past the bound" is exactly one past it).
import { isLosslessNumber } from 'lossless-json';
import { loadBundle, type JsonSchema, type OpenApiDocument } from '../contract.ts';
import type { JsonBody } from './json-text.ts';

export type { JsonSchema };

export type ParameterLocation = 'path' | 'query' | 'header';

export interface ParameterSpec {
  name: string;
  in: ParameterLocation;
  required: boolean;
  schema: JsonSchema;
  /** `form` + `explode` arrays are sent as a repeated query parameter. */
  explode: boolean;
  allowReserved: boolean;
}

export interface ResponseSpec {
  status: number;
  /** The declared media type; undefined for a response without a body (204). */
  mediaType: string | undefined;
  schema: JsonSchema | undefined;
}

export interface OperationSpec {
  operationId: string;
  /** Upper case, as sent. */
  method: string;
  pathTemplate: string;
  parameters: ParameterSpec[];
  /** The request body: its schema, and the contract's named examples of it (valid by the lint). */
  body: { required: boolean; schema: JsonSchema; examples: JsonBody[] } | undefined;
  responses: Map<number, ResponseSpec>;
  /** Whether it takes a credential (`security: []` says it takes none: the health probes). */
  authenticated: boolean;
}

export interface FuzzContract {
  document: OpenApiDocument;
  operations: OperationSpec[];
  /** Follows `$ref`s until a schema that is not one. */
  resolve(schema: JsonSchema): JsonSchema;
  /** Values the contract's own examples give to each property or parameter name (`name[]` for array items). */
  exampleValues: Map<string, unknown[]>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export function loadFuzzContract(): FuzzContract {
  const document = loadBundle();
  const resolveRef = (ref: string): unknown => {
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are bundled, not ${ref}`);
    let node: unknown = document;
    for (const segment of ref.slice(2).split('/'))
      node = (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`unresolved $ref ${ref}`);
    return node;
  };
  const deref = <T>(node: T): T => {
    let current: unknown = node;
    while (current && typeof current === 'object' && typeof (current as { $ref?: unknown }).$ref === 'string')
      current = resolveRef((current as { $ref: string }).$ref);
    return current as T;
  };

  const operations: OperationSpec[] = [];
  for (const [pathTemplate, rawItem] of Object.entries(document.paths)) {
    const item = rawItem;
    const shared = ((item.parameters as unknown[]) ?? []).map(deref);
    for (const method of METHODS) {
      const operation = item[method] as Record<string, any> | undefined;
      if (!operation) continue;
      const own = ((operation.parameters as unknown[]) ?? []).map(deref);
      const parameters = [...shared, ...own].map((raw) => toParameter(raw as Record<string, any>));
      const requestBody = operation.requestBody ? deref(operation.requestBody as Record<string, any>) : undefined;
      const bodyMedia = requestBody?.content?.['application/json'] as
        { schema?: JsonSchema; examples?: Record<string, unknown> } | undefined;
      const bodySchema = bodyMedia?.schema;
      const bodyExamples = Object.values(bodyMedia?.examples ?? {}).map((example) =>
        toJsonBody(deref(example as { value?: unknown }).value),
      );
      const responses = new Map<number, ResponseSpec>();
      for (const [status, rawResponse] of Object.entries(operation.responses as Record<string, unknown>)) {
        const response = deref(rawResponse) as Record<string, any>;
        const [mediaType, media] = Object.entries((response.content ?? {}) as Record<string, { schema?: JsonSchema }>)[0] ?? [];
        responses.set(Number(status), { status: Number(status), mediaType, schema: media?.schema });
      }
      operations.push({
        operationId: operation.operationId as string,
        method: method.toUpperCase(),
        pathTemplate,
        parameters,
        body: bodySchema ? { required: requestBody?.required === true, schema: bodySchema, examples: bodyExamples } : undefined,
        responses,
        authenticated: !(Array.isArray(operation.security) && operation.security.length === 0),
      });
    }
  }
  return { document, operations, resolve: deref, exampleValues: harvestExamples(document, deref) };
}

function toParameter(raw: Record<string, any>): ParameterSpec {
  const location = raw.in as string;
  if (location !== 'path' && location !== 'query' && location !== 'header') throw new Error(`parameter ${raw.name} in ${location}`);
  return {
    name: raw.name as string,
    in: location,
    required: raw.required === true,
    schema: raw.schema as JsonSchema,
    explode: raw.explode !== false,
    allowReserved: raw.allowReserved === true,
  };
}

/** Every leaf value the contract's examples give a property, keyed by the property's name. */
function harvestExamples(document: OpenApiDocument, deref: <T>(node: T) => T): Map<string, unknown[]> {
  const values = new Map<string, unknown[]>();
  const add = (name: string, value: unknown) => {
    const list = values.get(name) ?? [];
    if (!list.some((known) => String(known) === String(value))) list.push(value);
    values.set(name, list);
  };
  const visit = (name: string | undefined, value: unknown) => {
    if (isLosslessNumber(value)) value = BigInt(value.value);
    if (Array.isArray(value)) {
      for (const item of value) {
        if (item !== null && typeof item === 'object') visit(undefined, item);
        else if (name) add(`${name}[]`, item);
      }
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) visit(key, item);
    } else if (name !== undefined && value !== null) {
      add(name, value);
    }
  };
  const components = document.components as unknown as {
    examples?: Record<string, { value?: unknown }>;
    parameters?: Record<string, unknown>;
  };
  for (const example of Object.values(components.examples ?? {})) visit(undefined, deref(example).value);
  for (const rawItem of Object.values(document.paths)) {
    for (const [key, operation] of Object.entries(rawItem as Record<string, any>)) {
      const parameters = key === 'parameters' ? (operation as unknown[]) : ((operation?.parameters as unknown[]) ?? []);
      for (const parameter of parameters.map(deref) as Array<Record<string, unknown>>) {
        if (parameter.example !== undefined) visit(parameter.name as string, parameter.example);
      }
    }
  }
  return values;
}

/** A value of the lossless bundle as a body value: integers beyond 2^53 as bigints. */
function toJsonBody(value: unknown): JsonBody {
  if (isLosslessNumber(value)) return BigInt(value.value);
  if (Array.isArray(value)) return value.map(toJsonBody);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toJsonBody(item)]));
  return value as JsonBody;
}
