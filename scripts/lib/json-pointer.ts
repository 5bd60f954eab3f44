/**
 * Local `$ref`s (`#/components/schemas/Vm`) as the keys they name, and the node those keys reach.
 * Every script that follows a reference in the contract uses these; each says for itself what a
 * reference to nothing means (an error of its own, or a finding).
 */
import { pointerOf } from '../../server/http/pointer.ts';

/** The keys a local `$ref` names, unescaped (RFC 6901, in a URI fragment); undefined for any other. */
export function refSegments(ref: string): string[] | undefined {
  if (ref === '#') return [];
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .map((segment) => decodeURIComponent(segment).replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** What `segments` reach from `document`, or undefined where one of them names nothing of its own. */
export function nodeAt(document: unknown, segments: readonly string[]): unknown {
  let node = document;
  for (const segment of segments) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

/** What a local `$ref` names in `document`, or undefined. */
export const refTarget = (document: unknown, ref: string): unknown => {
  const segments = refSegments(ref);
  return segments === undefined ? undefined : nodeAt(document, segments);
};

/** A place in the document as a local `$ref` would name it: `#/paths/~1vms/get`. */
export const localRef = (path: ReadonlyArray<string | number>): string => `#${pointerOf(path)}`;
