import { operationRoutes, type OperationId, type OperationRoute } from '../../generated/operations.ts';

export interface MatchedRoute {
  operationId: OperationId;
  route: OperationRoute;
  params: Record<string, string>;
}

interface CompiledRoute {
  operationId: OperationId;
  route: OperationRoute;
  /** Its place in the contract: where several paths match, the first one wins, as it always has. */
  order: number;
  names: string[];
}

/** The routes by path segment: a literal segment, or any non-empty segment for a `{parameter}`. */
interface SegmentNode {
  literals: Map<string, SegmentNode>;
  parameter: SegmentNode | undefined;
  /** Routes whose path ends at this node. */
  routes: CompiledRoute[];
}

const newNode = (): SegmentNode => ({ literals: new Map(), parameter: undefined, routes: [] });

/**
 * The contract's paths as a tree of segments: a request's path is walked once, segment by
 * segment, instead of being tried against each operation's pattern in turn (that loop was about
 * 5% of a GET /billing's CPU, /billing being late in the contract).
 */
const tree = newNode();
Object.entries(operationRoutes).forEach(([operationId, route], order) => {
  const names: string[] = [];
  let node = tree;
  for (const segment of route.path.slice(1).split('/')) {
    const parameter = /^\{(\w+)\}$/.exec(segment);
    if (parameter) {
      names.push(parameter[1]!);
      node = node.parameter ??= newNode();
    } else {
      let next = node.literals.get(segment);
      if (!next) node.literals.set(segment, (next = newNode()));
      node = next;
    }
  }
  node.routes.push({ operationId: operationId as OperationId, route, order, names });
});

/** Every route whose path matches `segments` from `index` on, with the raw segments its parameters took. */
function collect(node: SegmentNode, segments: string[], index: number, values: string[], found: Array<[CompiledRoute, string[]]>): void {
  if (index === segments.length) {
    for (const route of node.routes) found.push([route, values]);
    return;
  }
  const segment = segments[index]!;
  const literal = node.literals.get(segment);
  if (literal) collect(literal, segments, index + 1, values, found);
  if (node.parameter && segment !== '') collect(node.parameter, segments, index + 1, [...values, segment], found);
}

/**
 * Finds the contract's operation for a request. `undefined` when no path matches; the methods
 * the path allows when it matches with another method. A path may end with one `/`.
 */
export function matchRoute(method: string, path: string): MatchedRoute | { allowed: string[] } | { undecodable: string } | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments = path.slice(1).split('/');
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop();
  const found: Array<[CompiledRoute, string[]]> = [];
  collect(tree, segments, 0, [], found);
  if (found.length > 1) found.sort(([a], [b]) => a.order - b.order);
  const wanted = method.toLowerCase();
  const allowed: string[] = [];
  for (const [candidate, values] of found) {
    if (candidate.route.method === wanted) {
      const params: Record<string, string> = {};
      for (const [index, name] of candidate.names.entries()) {
        const decoded = decodePathSegment(values[index]!);
        if (decoded === undefined) return { undecodable: name };
        params[name] = decoded;
      }
      return { operationId: candidate.operationId, route: candidate.route, params };
    }
    allowed.push(candidate.route.method.toUpperCase());
  }
  return allowed.length > 0 ? { allowed } : undefined;
}

/** A percent-encoded path segment, decoded; undefined when its encoding is broken (`%ZZ`, invalid UTF-8). */
function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
