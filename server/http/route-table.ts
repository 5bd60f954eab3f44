import { operationRoutes, type OperationId, type OperationRoute } from '../../generated/operations.ts';

export interface MatchedRoute {
  operationId: OperationId;
  route: OperationRoute;
  params: Record<string, string>;
}

interface CompiledRoute {
  operationId: OperationId;
  route: OperationRoute;
  pattern: RegExp;
  names: string[];
}

const compiled: CompiledRoute[] = Object.entries(operationRoutes).map(([operationId, route]) => {
  const names: string[] = [];
  const source = route.path
    .replace(/[.*+?^${}()|[\]\\]/g, (char) => (char === '{' || char === '}' ? char : `\\${char}`))
    .replace(/\{(\w+)\}/g, (_match, name: string) => {
      names.push(name);
      return '([^/]+)';
    });
  return { operationId: operationId as OperationId, route, pattern: new RegExp(`^${source}/?$`), names };
});

/**
 * Finds the contract's operation for a request. `undefined` when no path matches; the methods
 * the path allows when it matches with another method.
 */
export function matchRoute(method: string, path: string): MatchedRoute | { allowed: string[] } | { undecodable: string } | undefined {
  const allowed: string[] = [];
  for (const candidate of compiled) {
    const match = candidate.pattern.exec(path);
    if (!match) continue;
    if (candidate.route.method === method.toLowerCase()) {
      const params: Record<string, string> = {};
      for (const [index, name] of candidate.names.entries()) {
        const decoded = decodePathSegment(match[index + 1]!);
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
