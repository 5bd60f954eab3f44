// What every mutator shares: the context it works in, what it reports, and how a mutated body
// is judged against the contract.
import type { FuzzContract, JsonSchema, OperationSpec } from './contract.ts';
import type { Draft, FuzzTarget } from './draft.ts';
import { encodeJson, hasRawParts, isPlainObject, toPlainJson, type JsonBody } from './json-text.ts';
import type { Random } from './random.ts';
import type { SchemaCheck } from './schema-check.ts';
import type { ValueGenerator } from './values.ts';

export interface MutationContext {
  random: Random;
  contract: FuzzContract;
  schemas: SchemaCheck;
  values: ValueGenerator;
  target: FuzzTarget;
}

export interface Mutation {
  /** A stable name, such as `body.number-literal`: failures are grouped by it. */
  kind: string;
  /** What was changed, precisely enough to read the request without its bytes. */
  description: string;
  /**
   * true: the contract makes this request invalid, so no 2xx may answer it. false: still valid.
   * undefined: the contract does not decide (a duplicate header, a BOM), only the other checks apply.
   */
  mustRefuse: boolean | undefined;
}

export interface Mutator {
  kind: string;
  /** How many turns this mutator gets in an operation's cycle of cases; 0 where it does not apply. */
  weight(operation: OperationSpec): number;
  /** Changes the draft; undefined when it found nothing to change after all. */
  apply(draft: Draft, context: MutationContext): Omit<Mutation, 'kind'> | undefined;
}

/** Whether the draft's body, as the server will parse it, breaks the contract's schema. */
export function bodyBreaksContract(draft: Draft, context: MutationContext): boolean | undefined {
  const schema = draft.operation.body?.schema;
  if (!schema || draft.body === undefined || draft.bodyBytes !== undefined || hasRawParts(draft.body)) return undefined;
  return !context.schemas.validates(schema, toPlainJson(draft.body));
}

/** A value inside a body, with the schema that governs it there (undefined: nothing allows it). */
export interface BodySite {
  path: Array<string | number>;
  schema: JsonSchema | undefined;
  value: JsonBody;
}

/** Every value of the body, the body itself first, each with its schema. */
export function bodySites(body: JsonBody, schema: JsonSchema | undefined, contract: FuzzContract): BodySite[] {
  const sites: BodySite[] = [];
  const visit = (value: JsonBody, rawSchema: JsonSchema | undefined, path: Array<string | number>) => {
    const resolved = rawSchema ? narrow(contract.resolve(rawSchema), value, contract) : undefined;
    sites.push({ path, schema: resolved, value });
    if (Array.isArray(value)) value.forEach((item, index) => visit(item, resolved?.items as JsonSchema | undefined, [...path, index]));
    else if (isPlainObject(value)) {
      const properties = (resolved?.properties ?? {}) as Record<string, JsonSchema>;
      const additional = resolved?.additionalProperties;
      for (const [key, item] of Object.entries(value)) {
        visit(item, properties[key] ?? (additional && typeof additional === 'object' ? (additional as JsonSchema) : undefined), [
          ...path,
          key,
        ]);
      }
    }
  };
  visit(body, schema, []);
  return sites;
}

/** Of `anyOf`/`oneOf`, the variant the value is meant for (null, or the other one). */
function narrow(schema: JsonSchema, value: JsonBody, contract: FuzzContract): JsonSchema {
  const variants = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (!variants) return schema;
  const resolved = variants.map((variant) => contract.resolve(variant));
  const chosen = resolved.find((variant) => (value === null) === (variant.type === 'null')) ?? resolved[0]!;
  return narrow(chosen, value, contract);
}

/** Replaces the value at `path` (the body itself for an empty path); returns the new body. */
export function replaceAt(body: JsonBody, path: Array<string | number>, value: JsonBody): JsonBody {
  if (path.length === 0) return value;
  const container = containerOf(body, path);
  const last = path[path.length - 1]!;
  if (Array.isArray(container)) container[last as number] = value;
  else Object.defineProperty(container, last, { value, enumerable: true, writable: true, configurable: true });
  return body;
}

export function deleteAt(body: JsonBody, path: Array<string | number>): void {
  const container = containerOf(body, path);
  const last = path[path.length - 1]!;
  if (Array.isArray(container)) container.splice(last as number, 1);
  else delete (container as Record<string, JsonBody>)[last];
}

function containerOf(body: JsonBody, path: Array<string | number>): JsonBody[] | { [key: string]: JsonBody } {
  let node = body;
  for (const segment of path.slice(0, -1)) node = (node as Record<string | number, JsonBody>)[segment]!;
  return node as JsonBody[] | { [key: string]: JsonBody };
}

/** A deep copy of a body value, so that a mutation can be judged on a scratch copy. */
export function cloneBody(value: JsonBody): JsonBody {
  if (Array.isArray(value)) return value.map(cloneBody);
  if (isPlainObject(value)) {
    const copy: { [key: string]: JsonBody } = {};
    for (const [key, item] of Object.entries(value))
      Object.defineProperty(copy, key, { value: cloneBody(item), enumerable: true, writable: true, configurable: true });
    return copy;
  }
  return value;
}

/** Short, printable text of a value for a description (long strings abbreviated). */
export function preview(value: unknown, limit = 60): string {
  // Written as the body's bytes are: a bigint anywhere inside (JSON.stringify throws on one) with
  // every digit, raw literals as they are.
  const text = value === undefined ? 'undefined' : encodeJson(value as JsonBody).toString('utf8');
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length} chars)` : text;
}
