/**
 * What the mock proxy needs to know of each operation beyond its route (the route is found by
 * the server's own route table): the status Prism answers by default, which statuses hold each
 * named example, and the cursors its examples hand out.
 */

import { refTarget } from './json-pointer.ts';

type Json = Record<string, unknown>;

export interface MockOperation {
  operationId: string;
  /** The first success status: the response Prism serves when nothing is preferred. */
  defaultStatus: number;
  /** Every named example of the operation's responses, with the statuses it appears under (lowest first). */
  examples: Map<string, number[]>;
  /** The `next_cursor` values of its examples: the only cursors the mock issued for this list. */
  cursors: Set<string>;
}

export type MockOperations = Map<string, MockOperation>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every operation of the document, by operationId. */
export function mockOperations(document: Json): MockOperations {
  const resolve = resolverOf(document);
  const operations: MockOperations = new Map();
  for (const item of Object.values(document.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const responses = Object.entries(operation.responses as Record<string, Json>).sort(([a], [b]) => Number(a) - Number(b));
      const examples = new Map<string, number[]>();
      const cursors = new Set<string>();
      for (const [status, response] of responses) {
        for (const media of Object.values((resolve(response).content ?? {}) as Record<string, Json>)) {
          for (const [name, example] of Object.entries((media.examples ?? {}) as Record<string, Json>)) {
            const statuses = examples.get(name) ?? [];
            if (!statuses.includes(Number(status))) statuses.push(Number(status));
            examples.set(name, statuses);
            const cursor = (resolve(example).value as { next_cursor?: unknown } | undefined)?.next_cursor;
            if (typeof cursor === 'string') cursors.add(cursor);
          }
        }
      }
      operations.set(String(operation.operationId), {
        operationId: String(operation.operationId),
        defaultStatus: Number(responses.find(([status]) => status.startsWith('2'))?.[0] ?? 200),
        examples,
        cursors,
      });
    }
  }
  return operations;
}

/** Who an operation of the platform (an `Operation` of the contract) is: what stays when its state changes. */
export interface OperationIdentity {
  id: string;
  type: string;
  resource_type: string;
  resource_id: string;
  created_at: string;
}

/**
 * Every operation of the platform the examples' story starts (the `operation` of each 202 example,
 * the operations of a list…), by id: the first example naming an id tells who it is.
 */
export function storyOperations(document: Json): Map<string, OperationIdentity> {
  const found = new Map<string, OperationIdentity>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const object = node as Json;
    if (isOperation(object) && !found.has(object.id)) {
      const { id, type, resource_type, resource_id, created_at } = object;
      found.set(id, { id, type, resource_type, resource_id, created_at });
    }
    Object.values(object).forEach(visit);
  };
  const components = (document.components ?? {}) as { examples?: Record<string, { value?: unknown }> };
  for (const example of Object.values(components.examples ?? {})) visit(example.value);
  return found;
}

function isOperation(object: Json): object is Json & OperationIdentity {
  return (
    ['id', 'type', 'resource_type', 'resource_id', 'created_at'].every((key) => typeof object[key] === 'string') &&
    'state' in object &&
    'max_attempts' in object
  );
}

/** Follows a local `$ref` (`#/components/…`) to what it names. */
function resolverOf(document: Json): (node: Json) => Json {
  const resolve = (node: Json): Json => {
    if (typeof node.$ref !== 'string') return node;
    const target = refTarget(document, node.$ref);
    if (target === undefined) throw new Error(`the mock document has no ${node.$ref}`);
    return resolve(target as Json);
  };
  return resolve;
}
