/**
 * What changed between two bundled OpenAPI 3.1 documents, seen from a client of the older one.
 *
 * No maintained npm package diffs OpenAPI 3.1 without downloading a binary at install time
 * (`openapi-diff` reads only 2.0/3.0, `@pb33f/openapi-changes` and `oasdiff` are Go binaries,
 * `@useoptic/optic` sends telemetry and is no longer maintained), so this is a focused checker
 * over the bundled JSON: it follows local `$ref`s and compares operations (keyed by method and
 * path), parameters, request bodies, responses, response headers and schemas.
 *
 * A schema is compared in the direction its data flows. In a request the client writes and the
 * server reads: the current contract must accept everything the released one accepted (a removed
 * field or enum value, a narrowed type or bound, a newly required field breaks). In a response
 * the server writes and the client reads: the current contract may not produce anything the
 * released one could not (a removed or no longer required field, a new type such as null, a new
 * enum value unless the released enum says `x-open-enum: true`, a widened bound breaks), and a
 * removed enum value breaks as well, since clients compiled their code against it.
 */

import { nodeAt, refSegments } from './json-pointer.ts';

type Json = Record<string, unknown>;
type Direction = 'request' | 'response';

export type ChangeKind = 'breaking' | 'added' | 'changed' | 'deprecated';

export interface ContractChange {
  kind: ChangeKind;
  /** A stable identifier, the same on every run: what an accepted break names. */
  id: string;
  /** One sentence for the changelog. */
  message: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
const BOUNDS_LOWER = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'] as const;
const BOUNDS_UPPER = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'] as const;

/** Every change from `released` to `current`, breaking ones first, each once. */
export function diffContracts(released: unknown, current: unknown, options: { today?: Date } = {}): ContractChange[] {
  const differ = new Differ(released as Json, current as Json, options.today ?? new Date());
  differ.compare();
  const order: Record<ChangeKind, number> = { breaking: 0, deprecated: 1, changed: 2, added: 3 };
  const unique = new Map(differ.changes.map((change) => [`${change.kind} ${change.id}`, change]));
  return [...unique.values()].sort((a, b) => order[a.kind] - order[b.kind] || a.id.localeCompare(b.id));
}

class Differ {
  readonly changes: ContractChange[] = [];
  private readonly seen = new Set<string>();
  private readonly released: Json;
  private readonly current: Json;
  private readonly today: Date;

  constructor(released: Json, current: Json, today: Date) {
    this.released = released;
    this.current = current;
    this.today = today;
  }

  compare(): void {
    const before = operationsOf(this.released);
    const after = operationsOf(this.current);
    for (const [key, old] of before) {
      const now = after.get(key);
      if (!now) {
        const sunset = typeof old.operation['x-sunset'] === 'string' ? new Date(old.operation['x-sunset']) : undefined;
        if (old.operation.deprecated === true && sunset && sunset <= this.today) {
          this.add(
            'changed',
            `operation-removed-after-sunset ${key}`,
            `${describe(old)} was removed after its sunset (${String(old.operation['x-sunset'])}).`,
          );
        } else {
          this.add('breaking', `operation-removed ${key}`, `${describe(old)} was removed.`);
        }
        continue;
      }
      this.compareOperation(key, old, now);
    }
    for (const [key, now] of after) {
      if (!before.has(key)) this.add('added', `operation-added ${key}`, `${describe(now)} was added.`);
    }
  }

  private compareOperation(key: string, old: OperationEntry, now: OperationEntry): void {
    const where = describe(now);
    if (old.operation.operationId !== now.operation.operationId) {
      this.add('breaking', `operation-id-changed ${key}`, `${where}: its operationId changed from ${String(old.operation.operationId)}.`);
    }
    if (now.operation.deprecated === true && old.operation.deprecated !== true) {
      this.add(
        'deprecated',
        `operation-deprecated ${key}`,
        `${where} is deprecated; it is removed after ${String(now.operation['x-sunset'])}.`,
      );
    }
    if (old.operation.deprecated === true && now.operation.deprecated !== true) {
      this.add('changed', `operation-undeprecated ${key}`, `${where} is no longer deprecated.`);
    }
    this.compareParameters(key, where, old, now);
    this.compareRequestBody(key, where, old.operation, now.operation);
    this.compareResponses(key, where, old.operation, now.operation);
  }

  private compareParameters(key: string, where: string, old: OperationEntry, now: OperationEntry): void {
    const before = parametersOf(this.released, old);
    const after = parametersOf(this.current, now);
    for (const [name, parameter] of before) {
      const next = after.get(name);
      if (!next) {
        this.add('breaking', `parameter-removed ${key} ${name}`, `${where}: the ${parameterText(name)} was removed.`);
        continue;
      }
      if (next.required === true && parameter.required !== true) {
        this.add('breaking', `parameter-now-required ${key} ${name}`, `${where}: the ${parameterText(name)} became required.`);
      }
      this.compareSchema(`${key} ${name}`, `${where}: the ${parameterText(name)}`, parameter.schema, next.schema, 'request');
    }
    for (const [name, parameter] of after) {
      if (before.has(name)) continue;
      if (parameter.required === true) {
        this.add('breaking', `parameter-required-added ${key} ${name}`, `${where}: a required ${parameterText(name)} was added.`);
      } else {
        this.add('added', `parameter-added ${key} ${name}`, `${where}: an optional ${parameterText(name)} was added.`);
      }
    }
  }

  private compareRequestBody(key: string, where: string, old: Json, now: Json): void {
    const before = this.deref(this.released, old.requestBody);
    const after = this.deref(this.current, now.requestBody);
    if (!before && !after) return;
    if (before && !after) {
      this.add('breaking', `request-body-removed ${key}`, `${where}: the request body was removed.`);
      return;
    }
    if (!before && after) {
      if (after.required === true)
        this.add('breaking', `request-body-required-added ${key}`, `${where}: a required request body was added.`);
      else this.add('added', `request-body-added ${key}`, `${where}: an optional request body was added.`);
      return;
    }
    if (after!.required === true && before!.required !== true) {
      this.add('breaking', `request-body-now-required ${key}`, `${where}: the request body became required.`);
    }
    const beforeContent = (before!.content ?? {}) as Record<string, Json>;
    const afterContent = (after!.content ?? {}) as Record<string, Json>;
    for (const [mediaType, media] of Object.entries(beforeContent)) {
      const next = afterContent[mediaType];
      if (!next) {
        this.add(
          'breaking',
          `request-media-type-removed ${key} ${mediaType}`,
          `${where}: the request body no longer accepts ${mediaType}.`,
        );
        continue;
      }
      this.compareSchema(`${key} body`, `${where}: the request body`, media.schema, next.schema, 'request');
    }
  }

  private compareResponses(key: string, where: string, old: Json, now: Json): void {
    const before = (old.responses ?? {}) as Record<string, unknown>;
    const after = (now.responses ?? {}) as Record<string, unknown>;
    const success = (responses: Record<string, unknown>) => Object.keys(responses).filter((status) => /^2/.test(status));
    const beforeSuccess = success(before).sort().join(', ');
    const afterSuccess = success(after).sort().join(', ');
    if (beforeSuccess !== afterSuccess) {
      this.add(
        'breaking',
        `success-status-changed ${key}`,
        `${where}: its success status changed from ${beforeSuccess} to ${afterSuccess}.`,
      );
    }
    for (const [status, response] of Object.entries(before)) {
      const next = after[status];
      if (next === undefined) {
        if (!/^2/.test(status))
          this.add('changed', `response-removed ${key} ${status}`, `${where}: no longer documents a ${status} response.`);
        continue;
      }
      this.compareResponse(`${key} ${status}`, `${where}: the ${status} response`, response, next);
    }
    for (const status of Object.keys(after)) {
      if (before[status] === undefined && !/^2/.test(status)) {
        this.add('added', `response-added ${key} ${status}`, `${where}: now documents a ${status} response.`);
      }
    }
  }

  private compareResponse(id: string, where: string, old: unknown, now: unknown): void {
    const before = this.deref(this.released, old) ?? {};
    const after = this.deref(this.current, now) ?? {};
    const beforeHeaders = (before.headers ?? {}) as Record<string, unknown>;
    const afterHeaders = lowerKeys((after.headers ?? {}) as Record<string, unknown>);
    for (const [name, header] of Object.entries(beforeHeaders)) {
      const next = afterHeaders[name.toLowerCase()];
      const oldHeader = this.deref(this.released, header) ?? {};
      if (next === undefined) {
        this.add('breaking', `response-header-removed ${id} ${name}`, `${where} no longer sends the ${name} header.`);
        continue;
      }
      const newHeader = this.deref(this.current, next) ?? {};
      if (oldHeader.required === true && newHeader.required !== true) {
        this.add('breaking', `response-header-optional ${id} ${name}`, `${where} may now omit the ${name} header.`);
      }
      this.compareSchema(`${id} header ${name}`, `${where}: the ${name} header`, oldHeader.schema, newHeader.schema, 'response');
    }
    const beforeNames = new Set(Object.keys(beforeHeaders).map((name) => name.toLowerCase()));
    for (const name of Object.keys(after.headers ?? {})) {
      if (!beforeNames.has(name.toLowerCase()))
        this.add('added', `response-header-added ${id} ${name}`, `${where} now sends the ${name} header.`);
    }
    const beforeContent = (before.content ?? {}) as Record<string, Json>;
    const afterContent = (after.content ?? {}) as Record<string, Json>;
    for (const [mediaType, media] of Object.entries(beforeContent)) {
      const next = afterContent[mediaType];
      if (!next) {
        this.add('breaking', `response-media-type-removed ${id} ${mediaType}`, `${where} is no longer ${mediaType}.`);
        continue;
      }
      this.compareSchema(`${id} body`, `${where}`, media.schema, next.schema, 'response');
    }
  }

  /**
   * Compares two schemas at one place of the contract. `id` and `where` name the place; `path`
   * is the JSON location inside the schema (`/items/*` for array items, `/name` for a property).
   */
  private compareSchema(id: string, where: string, oldSchema: unknown, newSchema: unknown, direction: Direction, path = ''): void {
    const visit = `${id}|${path}|${refOf(oldSchema)}|${refOf(newSchema)}|${direction}`;
    if (this.seen.has(visit)) return;
    this.seen.add(visit);
    const before = this.deref(this.released, oldSchema);
    const after = this.deref(this.current, newSchema);
    if (!before || !after) return;
    const at = path === '' ? where : `${where}, field ${path}`;
    const mark = (kind: string, message: string, breaking = true) =>
      this.add(breaking ? 'breaking' : 'changed', `${kind} ${id} ${path || '/'}`.trimEnd(), `${at}: ${message}`);

    // Types: a request must still accept every released type; a response may not produce a new one.
    const beforeTypes = typesOf(before);
    const afterTypes = typesOf(after);
    if (beforeTypes && afterTypes) {
      const removed = [...beforeTypes].filter((type) => !afterTypes.has(type) && !(type === 'integer' && afterTypes.has('number')));
      const added = [...afterTypes].filter((type) => !beforeTypes.has(type) && !(type === 'integer' && beforeTypes.has('number')));
      if (direction === 'request' && removed.length > 0) mark('type-narrowed', `no longer accepts ${removed.join(', ')}.`);
      if (direction === 'response' && added.length > 0) mark('type-widened', `may now be ${added.join(', ')}.`);
      if (direction === 'request' && added.length > 0) mark('type-widened', `now also accepts ${added.join(', ')}.`, false);
      if (direction === 'response' && removed.length > 0) mark('type-narrowed', `is no longer ${removed.join(', ')}.`, false);
    }

    // Enums and constants.
    const beforeEnum = enumOf(before);
    const afterEnum = enumOf(after);
    if (beforeEnum && afterEnum) {
      const removed = beforeEnum.filter((value) => !afterEnum.some((other) => sameValue(value, other)));
      const added = afterEnum.filter((value) => !beforeEnum.some((other) => sameValue(value, other)));
      for (const value of removed) mark(`enum-value-removed ${JSON.stringify(value)}`, `the value ${JSON.stringify(value)} was removed.`);
      for (const value of added) {
        const open = before['x-open-enum'] === true;
        if (direction === 'response' && !open)
          mark(
            `enum-value-added ${JSON.stringify(value)}`,
            `may now be ${JSON.stringify(value)}, which the released enum did not list (it is not marked x-open-enum).`,
          );
        else
          this.add(
            'added',
            `enum-value-added ${JSON.stringify(value)} ${id} ${path || '/'}`,
            `${at}: the value ${JSON.stringify(value)} was added.`,
          );
      }
    } else if (afterEnum && !beforeEnum && direction === 'request') {
      mark('enum-added', `now accepts only ${afterEnum.map((value) => JSON.stringify(value)).join(', ')}.`);
    } else if (beforeEnum && !afterEnum && direction === 'response') {
      mark('enum-removed', `is no longer limited to ${beforeEnum.map((value) => JSON.stringify(value)).join(', ')}.`);
    }

    // Bounds: narrowed in a request, widened in a response.
    for (const bound of [...BOUNDS_LOWER, ...BOUNDS_UPPER]) {
      const oldValue = numberOf(before[bound]);
      const newValue = numberOf(after[bound]);
      if (oldValue === newValue) continue;
      const isLower = (BOUNDS_LOWER as readonly string[]).includes(bound);
      // A bound that appears counts as the tightest change, a bound that disappears as the widest.
      const tighter = newValue === undefined ? false : oldValue === undefined ? true : isLower ? newValue > oldValue : newValue < oldValue;
      const text = `${bound} changed from ${oldValue ?? 'none'} to ${newValue ?? 'none'}.`;
      if (direction === 'request' ? tighter : !tighter) mark(`bound-${tighter ? 'narrowed' : 'widened'} ${bound}`, text);
      else mark(`bound-${tighter ? 'narrowed' : 'widened'} ${bound}`, text, false);
    }
    // A pattern or format that appears or changes limits what is valid; one that goes away limits nothing.
    for (const keyword of ['pattern', 'format'] as const) {
      if (before[keyword] === after[keyword]) continue;
      const breaking = direction === 'request' ? after[keyword] !== undefined : before[keyword] !== undefined;
      mark(
        `${keyword}-changed`,
        `${keyword} changed from ${String(before[keyword] ?? 'none')} to ${String(after[keyword] ?? 'none')}.`,
        breaking,
      );
    }

    // Objects: fields, required fields, extra fields.
    const beforeProperties = (before.properties ?? {}) as Record<string, unknown>;
    const afterProperties = (after.properties ?? {}) as Record<string, unknown>;
    const beforeRequired = new Set((before.required ?? []) as string[]);
    const afterRequired = new Set((after.required ?? []) as string[]);
    for (const [name, property] of Object.entries(beforeProperties)) {
      const fieldPath = `${path}/${name}`;
      if (!(name in afterProperties)) {
        this.add('breaking', `field-removed ${id} ${fieldPath}`, `${where}: the field ${fieldPath} was removed.`);
        continue;
      }
      if (direction === 'request' && afterRequired.has(name) && !beforeRequired.has(name)) {
        this.add('breaking', `field-now-required ${id} ${fieldPath}`, `${where}: the field ${fieldPath} became required.`);
      }
      if (direction === 'response' && beforeRequired.has(name) && !afterRequired.has(name)) {
        this.add('breaking', `field-now-optional ${id} ${fieldPath}`, `${where}: the field ${fieldPath} may now be absent.`);
      }
      this.compareSchema(id, where, property, afterProperties[name], direction, fieldPath);
    }
    for (const name of Object.keys(afterProperties)) {
      if (name in beforeProperties) continue;
      const fieldPath = `${path}/${name}`;
      if (direction === 'request' && afterRequired.has(name)) {
        this.add('breaking', `field-required-added ${id} ${fieldPath}`, `${where}: a required field ${fieldPath} was added.`);
      } else {
        this.add('added', `field-added ${id} ${fieldPath}`, `${where}: the field ${fieldPath} was added.`);
      }
    }
    if (direction === 'request' && before.additionalProperties !== false && after.additionalProperties === false) {
      mark('additional-properties-refused', 'no longer accepts fields it does not list.');
    }
    if (
      before.additionalProperties &&
      typeof before.additionalProperties === 'object' &&
      after.additionalProperties &&
      typeof after.additionalProperties === 'object'
    ) {
      this.compareSchema(id, where, before.additionalProperties, after.additionalProperties, direction, `${path}/*`);
    }

    // Arrays and composition.
    if (before.items !== undefined && after.items !== undefined)
      this.compareSchema(id, where, before.items, after.items, direction, `${path}/[]`);
    for (const keyword of ['anyOf', 'oneOf', 'allOf'] as const) {
      const oldBranches = (before[keyword] ?? []) as unknown[];
      const newBranches = (after[keyword] ?? []) as unknown[];
      if (oldBranches.length === 0 && newBranches.length === 0) continue;
      const shared = Math.min(oldBranches.length, newBranches.length);
      for (let index = 0; index < shared; index += 1) {
        this.compareSchema(id, where, oldBranches[index], newBranches[index], direction, `${path}/${keyword}[${index}]`);
      }
      const fewer = newBranches.length < oldBranches.length;
      const more = newBranches.length > oldBranches.length;
      if (keyword === 'allOf' ? (direction === 'request' ? more : fewer) : direction === 'request' ? fewer : more) {
        mark(`${keyword}-changed`, `${keyword} went from ${oldBranches.length} to ${newBranches.length} schemas.`);
      }
    }
  }

  private deref(document: Json, node: unknown, depth = 0): Json | undefined {
    if (node === null || typeof node !== 'object') return undefined;
    const object = node as Json;
    if (typeof object.$ref !== 'string') return object;
    if (depth > 32) throw new Error(`$ref chain too deep at ${object.$ref}`);
    return this.deref(document, resolvePointer(document, object.$ref), depth + 1);
  }

  private add(kind: ChangeKind, id: string, message: string): void {
    this.changes.push({ kind, id, message });
  }
}

interface OperationEntry {
  method: string;
  path: string;
  operation: Json;
  pathItem: Json;
}

function operationsOf(document: Json): Map<string, OperationEntry> {
  const operations = new Map<string, OperationEntry>();
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (operation) operations.set(`${method.toUpperCase()} ${path}`, { method, path, operation, pathItem: item });
    }
  }
  return operations;
}

function describe(entry: OperationEntry): string {
  const id = typeof entry.operation.operationId === 'string' ? ` (${entry.operation.operationId})` : '';
  return `${entry.method.toUpperCase()} ${entry.path}${id}`;
}

interface ParameterObject {
  name: string;
  in: string;
  required?: boolean;
  schema?: unknown;
}

/** The parameters of an operation, the path item's included, keyed `in:name` (header names in lower case). */
function parametersOf(document: Json, entry: OperationEntry): Map<string, ParameterObject> {
  const list = [...((entry.pathItem.parameters ?? []) as unknown[]), ...((entry.operation.parameters ?? []) as unknown[])];
  const parameters = new Map<string, ParameterObject>();
  for (const item of list) {
    const parameter = (isRef(item) ? resolvePointer(document, item.$ref) : item) as ParameterObject;
    const name = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name;
    parameters.set(`${parameter.in}:${name}`, parameter);
  }
  return parameters;
}

/** `query:limit` as `query parameter limit`. */
function parameterText(key: string): string {
  const [where, ...name] = key.split(':');
  return `${where} parameter ${name.join(':')}`;
}

function resolvePointer(document: Json, ref: string): unknown {
  const segments = refSegments(ref);
  if (segments === undefined) throw new Error(`only local $refs are followed, not ${ref}`);
  const node = nodeAt(document, segments);
  if (node === undefined) throw new Error(`$ref ${ref} points nowhere`);
  return node;
}

const isRef = (node: unknown): node is { $ref: string } =>
  node !== null && typeof node === 'object' && typeof (node as Json).$ref === 'string';

const refOf = (node: unknown): string => (isRef(node) ? node.$ref : '');

function typesOf(schema: Json): Set<string> | undefined {
  if (schema.type === undefined) return undefined;
  return new Set(Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string]);
}

function enumOf(schema: Json): unknown[] | undefined {
  if (Array.isArray(schema.enum)) return schema.enum as unknown[];
  if ('const' in schema) return [schema.const];
  return undefined;
}

const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

function lowerKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key.toLowerCase(), value]));
}
