import { restoreExactIntegers } from './exact-integers.ts';
import { refTarget } from './json-pointer.ts';

/**
 * The contract as the server loads it (`generated/openapi.runtime.json`): the bundle without what
 * is written for people (descriptions, summaries, examples, external docs), except the one
 * description OpenAPI requires, a response's. Every rule stays: the paths, operations, parameters,
 * bodies, responses, schemas with all their keywords, and the `x-` extensions the server reads.
 *
 * The server's request and response validator parses, dereferences and walks the whole document
 * at every start, before the first request it can answer; two thirds of the bundle's bytes are
 * prose and examples, which no check reads.
 */
export function runtimeContract(bundled: Record<string, unknown>): Record<string, unknown> {
  const runtime = withoutProse(bundled, 'object') as Record<string, unknown>;
  const dangling = danglingRefs(runtime);
  if (dangling.length > 0) throw new Error(`the runtime contract lost what these $refs point at: ${dangling.join(', ')}`);
  return runtime;
}

/** The runtime contract's text: compact, with the bundle's exact integer literals (`literals`) kept. */
export function runtimeContractText(bundled: Record<string, unknown>, literals: bigint[]): string {
  return `${restoreExactIntegers(JSON.stringify(runtimeContract(bundled)), literals)}\n`;
}

/** Keywords of OpenAPI objects and JSON Schemas that only people read. */
const PROSE = new Set(['description', 'summary', 'example', 'examples', 'externalDocs', '$comment', 'x-codeSamples']);

/**
 * Keywords whose value maps names chosen by the contract's authors (a property, a status code, a
 * media type, a component) to objects: those names are kept whatever they are (a property may be
 * called `description`), and the objects are read as objects again.
 */
const NAME_MAPS = new Set([
  'properties',
  'patternProperties',
  'dependentSchemas',
  '$defs',
  'paths',
  'webhooks',
  'callbacks',
  'components',
  'schemas',
  'responses',
  'parameters',
  'requestBodies',
  'headers',
  'securitySchemes',
  'links',
  'pathItems',
  'content',
  'encoding',
  'variables',
  'scopes',
  'mapping',
]);

/** Keywords whose value is data (a default, a constant, allowed values, an extension's own), copied whole. */
const DATA = new Set(['default', 'const', 'enum']);

/**
 * What a node of the document is: an object whose keys are keywords, a response object (whose
 * `description` the OpenAPI specification requires, and which is kept), or a map of names to one
 * or the other.
 */
type Kind = 'object' | 'response' | { mapOf: 'object' | 'response' };

function withoutProse(node: unknown, kind: Kind): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutProse(item, 'object'));
  if (node === null || typeof node !== 'object') return node;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (typeof kind === 'object') kept[key] = withoutProse(value, kind.mapOf);
    else if (PROSE.has(key) && !(kind === 'response' && key === 'description')) continue;
    // Security requirements: each maps the names of security schemes to scopes.
    else if (key === 'security' && Array.isArray(value))
      kept[key] = value.map((requirement) => withoutProse(requirement, { mapOf: 'object' }));
    else if (key === 'components') kept[key] = withoutComponentExamples(value);
    else if (DATA.has(key) || key.startsWith('x-')) kept[key] = value;
    // `parameters` is a list of parameter objects in an operation, a map in components.
    else if (NAME_MAPS.has(key) && !Array.isArray(value))
      kept[key] = withoutProse(value, { mapOf: key === 'responses' ? 'response' : 'object' });
    else kept[key] = withoutProse(value, 'object');
  }
  return kept;
}

/** `components` without `components.examples`, which only the examples that were left out point at. */
function withoutComponentExamples(components: unknown): unknown {
  const { examples: _examples, ...rest } = (components ?? {}) as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const [kind, byName] of Object.entries(rest))
    kept[kind] = withoutProse(byName, { mapOf: kind === 'responses' ? 'response' : 'object' });
  return kept;
}

/** The local `$ref`s of `document` that point at nothing in it. */
function danglingRefs(document: Record<string, unknown>): string[] {
  const dangling = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && refTarget(document, value) === undefined) dangling.add(value);
      else visit(value);
    }
  };
  visit(document);
  return [...dangling].sort();
}
