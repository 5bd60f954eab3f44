/** Calls `visit` on every object (not array) of a parsed JSON document, parents first. */
export function forEachObject(node: unknown, visit: (object: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) forEachObject(item, visit);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const object = node as Record<string, unknown>;
  visit(object);
  for (const value of Object.values(object)) forEachObject(value, visit);
}
