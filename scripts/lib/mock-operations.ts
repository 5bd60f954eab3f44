/**
 * What the mock proxy needs to know of each operation beyond its route (the route is found by
 * the server's own route table): the status Prism answers by default, and which statuses hold
 * each named example.
 */

type Json = Record<string, unknown>;

export interface MockOperation {
  operationId: string;
  /** The operation takes no credential (`security: []`). */
  public: boolean;
  /** The first success status: the response Prism serves when nothing is preferred. */
  defaultStatus: number;
  /** Every named example of the operation's responses, with the statuses it appears under (lowest first). */
  examples: Map<string, number[]>;
}

export type MockOperations = Map<string, MockOperation>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every operation of the document, by operationId. */
export function mockOperations(document: Json): MockOperations {
  const components = (document.components ?? {}) as { responses?: Record<string, Json> };
  const resolve = (node: Json): Json =>
    typeof node.$ref === 'string' ? resolve(components.responses![node.$ref.split('/').pop()!]!) : node;
  const operations: MockOperations = new Map();
  for (const item of Object.values(document.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const responses = Object.entries(operation.responses as Record<string, Json>).sort(([a], [b]) => Number(a) - Number(b));
      const examples = new Map<string, number[]>();
      for (const [status, response] of responses) {
        for (const media of Object.values((resolve(response).content ?? {}) as Record<string, Json>)) {
          for (const name of Object.keys(media.examples ?? {})) {
            const statuses = examples.get(name) ?? [];
            if (!statuses.includes(Number(status))) statuses.push(Number(status));
            examples.set(name, statuses);
          }
        }
      }
      operations.set(String(operation.operationId), {
        operationId: String(operation.operationId),
        public: Array.isArray(operation.security) && operation.security.length === 0,
        defaultStatus: Number(responses.find(([status]) => status.startsWith('2'))?.[0] ?? 200),
        examples,
      });
    }
  }
  return operations;
}
