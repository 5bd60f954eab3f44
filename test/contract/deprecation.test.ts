// A deprecated operation says so on every answer: the generated route table carries its dates
// from the contract (x-deprecated-at, x-sunset), and the server answers with Deprecation and
// Sunset headers. No operation of /v1 is deprecated yet, so the contract is a planted one here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import { describe, expect, test } from 'vitest';
import { generateOperationsModule } from '../../scripts/lib/codegen/operations.ts';
import { repoRoot } from '../../scripts/lib/run.ts';
import { deprecation, deprecationHeaders } from '../../server/http/deprecation.ts';
import { stateOf } from '../../server/http/request-state.ts';
import { operationRoutes, type OperationId } from '../../generated/operations.ts';

/** The real bundle with getBilling deprecated. */
function withGetBillingDeprecated(dates: Record<string, string>): Parameters<typeof generateOperationsModule>[0] {
  const document = JSON.parse(readFileSync(path.join(repoRoot, 'generated', 'openapi.json'), 'utf8'));
  Object.assign(document.paths['/v1/orgs/{org}/billing'].get, { deprecated: true, ...dates });
  return document;
}

describe('the generated route table', () => {
  test('carries the dates of a deprecated operation, and only of it', () => {
    const module = generateOperationsModule(withGetBillingDeprecated({ 'x-deprecated-at': '2026-12-01', 'x-sunset': '2027-06-01' }));
    expect(module).toMatch(
      / {2}getBilling: \{\n(?: {4}.*\n)*? {4}deprecation: \{ deprecatedAt: '2026-12-01', sunset: '2027-06-01' \},\n {2}\},/,
    );
    expect(module.match(/deprecation: \{ deprecatedAt/g)).toHaveLength(1);
  });

  test('refuses a deprecated operation without its dates', () => {
    expect(() => generateOperationsModule(withGetBillingDeprecated({ 'x-sunset': '2027-06-01' }))).toThrow(
      /getBilling: a deprecated operation needs/,
    );
  });

  test('has no deprecated operation in the current contract', () => {
    expect(Object.values(operationRoutes).filter((route) => 'deprecation' in route)).toEqual([]);
  });
});

describe('the server', () => {
  const deprecatedRoute = { ...operationRoutes.getBilling, deprecation: { deprecatedAt: '2026-12-01', sunset: '2027-06-01' } };

  test('formats the headers as RFC 9745 and RFC 8594 say', () => {
    expect(deprecationHeaders(deprecatedRoute)).toEqual({ Deprecation: '@1796083200', Sunset: 'Tue, 01 Jun 2027 00:00:00 GMT' });
    expect(deprecationHeaders(operationRoutes.getBilling)).toEqual({});
  });

  test('answers a deprecated operation with Deprecation and Sunset, refusals included, and others without', async () => {
    const app = express();
    app.use((req, res, next) => {
      const operationId: OperationId = 'getBilling';
      stateOf(res).route = { operationId, route: req.path === '/old' ? deprecatedRoute : operationRoutes.getBilling, params: {} };
      next();
    });
    app.use(deprecation);
    app.get('/old', (_req, res) => res.status(409).json({ code: 'refused' }));
    app.get('/current', (_req, res) => res.json({}));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as { port: number };
      const old = await fetch(`http://127.0.0.1:${port}/old`);
      expect(old.status).toBe(409);
      expect(old.headers.get('deprecation')).toBe('@1796083200');
      expect(old.headers.get('sunset')).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
      const current = await fetch(`http://127.0.0.1:${port}/current`);
      expect(current.headers.get('deprecation')).toBeNull();
      expect(current.headers.get('sunset')).toBeNull();
    } finally {
      server.close();
    }
  });
});
