/** A JSON object of a parsed OpenAPI document, read without `any`. */
export type Json = Record<string, unknown>;

/** `value` as an object, or an empty one when it is not an object. */
export const objectOf = (value: unknown): Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};

export const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : []);

/** The node itself, or the component a local `$ref` (`#/components/<kind>/<name>`) points at. */
export function resolveRef(document: Json, node: unknown): Json {
  const object = objectOf(node);
  if (typeof object.$ref !== 'string') return object;
  const [, , kind, name] = object.$ref.split('/');
  return resolveRef(document, objectOf(objectOf(objectOf(document.components)[kind ?? ''])[name ?? '']));
}
