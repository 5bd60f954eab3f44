import { describe, expect, it } from 'vitest';
import { operationRoutes, type OperationId } from '../../../generated/operations.ts';
import { matchRoute } from '../../../server/http/route-table.ts';

const operations = Object.entries(operationRoutes) as Array<[OperationId, { method: string; path: string }]>;
/** A path of the contract with each `{name}` filled by `value(name)`. */
const filled = (path: string, value: (name: string) => string) => path.replace(/\{(\w+)\}/g, (_match, name: string) => value(name));

describe('the router (server/http/route-table.ts)', () => {
  it('finds every operation of the contract, with its path parameters decoded, with or without one trailing slash', () => {
    for (const [operationId, route] of operations) {
      const path = filled(route.path, (name) => `${name}%2Dx`);
      const params = Object.fromEntries([...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name!, `${name}-x`]));
      for (const requested of [path, `${path}/`]) {
        expect(matchRoute(route.method.toUpperCase(), requested), `${route.method} ${requested}`).toEqual({ operationId, route, params });
      }
    }
  });

  it('answers the methods a path allows, in the contract order, for a method it does not', () => {
    for (const [, route] of operations) {
      const path = filled(route.path, () => 'id1');
      const methods = operations.filter(([, other]) => other.path === route.path).map(([, other]) => other.method.toUpperCase());
      expect(matchRoute('TRACE', path)).toEqual({ allowed: methods });
    }
  });

  it('matches nothing for an unknown path, an empty segment, two trailing slashes or a path with more segments', () => {
    for (const path of [
      '/',
      '/v1',
      '/v1/orgs',
      '/v1/orgs//billing',
      '/v1/orgs/o1/billing//',
      '/v1/orgs/o1/billing/extra',
      '/healthz/x',
      'v1/orgs/o1/billing',
    ]) {
      expect(matchRoute('GET', path), path).toBeUndefined();
    }
  });

  it('names the parameter whose percent-encoding is broken', () => {
    expect(matchRoute('GET', '/v1/orgs/%ZZ/billing')).toEqual({ undecodable: 'org' });
  });
});
