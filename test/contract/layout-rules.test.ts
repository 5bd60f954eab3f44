// The layout rules of spec/README.md are checks, not prose: each one, planted as a violation in a
// copy of the bundled contract, fails the lint at the place it was planted (and the contract as
// it is passes them: `npm run spec:lint` in npm test).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parse, stringify } from 'yaml';
import { rootLayoutFindings } from '../../scripts/lib/spec-layout.ts';
import { bin, repoRoot, run } from '../../scripts/lib/run.ts';

interface SpectralFinding {
  code: string;
  path: Array<string | number>;
}

const bundle = (): any => JSON.parse(readFileSync(path.join(repoRoot, 'generated', 'openapi.json'), 'utf8'));

async function spectral(document: unknown): Promise<SpectralFinding[]> {
  const file = path.join(workDir, `planted-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(document));
  const result = await run(bin('spectral'), ['lint', file, '--ruleset', layoutRuleset(), '--format', 'json', '--quiet']);
  const text = result.stdout.slice(result.stdout.search(/[[{]/));
  return (JSON.parse(text || '[]') as SpectralFinding[]).filter((finding) => finding.code.startsWith('layout-'));
}

/**
 * The layout rules exactly as `.spectral.yaml` declares them, without the OAS and OWASP rulesets
 * it extends: those run over the contract in `npm run spec:lint`, and took nine tenths of this
 * test's Spectral run (about 20 s of 22 on a quiet machine).
 */
function layoutRuleset(): string {
  const ruleset = parse(readFileSync(path.join(repoRoot, '.spectral.yaml'), 'utf8')) as {
    functionsDir: string;
    functions: string[];
    rules: Record<string, unknown>;
  };
  const layoutRules = Object.fromEntries(Object.entries(ruleset.rules).filter(([name]) => name.startsWith('layout-')));
  const file = path.join(workDir, 'layout-rules.spectral.yaml');
  // Spectral resolves functionsDir from the ruleset's own folder, and only as a relative path.
  const functionsDir = path.relative(workDir, path.join(repoRoot, ruleset.functionsDir));
  writeFileSync(file, stringify({ functionsDir, functions: ruleset.functions, rules: layoutRules }));
  return file;
}

let workDir: string;
let findings: SpectralFinding[];
const at = (code: string, ...pathPrefix: Array<string | number>) =>
  findings.filter((finding) => finding.code === code && pathPrefix.every((segment, index) => finding.path[index] === segment));

beforeAll(async () => {
  workDir = mkdtempSync(path.join(tmpdir(), 'layout-rules-'));
  // Every violation planted in one copy: one Spectral run.
  const planted = bundle();
  const billing = planted.components.schemas.BillingOut.properties;
  delete planted.components.schemas.ApiTokenCreateRequest.properties.name.maxLength;
  delete planted.components.schemas.OrgContextOut.properties.name.pattern;
  delete billing.spend_budget_cents.maximum;
  delete planted.components.schemas.OperationList.properties.items.maxItems;
  delete planted.components.schemas.OperationRef.additionalProperties;
  const listVms = planted.paths['/v1/orgs/{org}/compute/vms'].get;
  listVms['x-required-scope'] = 'write';
  const cancel = planted.paths['/v1/orgs/{org}/operations/{operation_id}/cancel'].post;
  cancel.parameters = cancel.parameters.filter((parameter: { $ref?: string }) => !parameter.$ref?.endsWith('/IdempotencyKey'));
  delete planted.paths['/v1/orgs/{org}/billing'].get.responses['503'];
  planted.paths['/v1/orgs/{org}/api-tokens'].get.responses['404'] = {
    description: 'inline',
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' }, examples: {} } },
  };
  const media = planted.paths['/v1/orgs/{org}/billing'].get.responses['200'].content['application/json'];
  media.example = media.examples[Object.keys(media.examples)[0]!].value ?? {};
  delete media.examples;
  findings = await spectral(planted);
}, 300_000);

afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe('the layout rules find each planted violation where it was planted', () => {
  test('a string without maxLength, and one without format, pattern, enum or const', () => {
    expect(at('layout-strings', 'components', 'schemas', 'ApiTokenCreateRequest', 'properties', 'name')).not.toEqual([]);
    expect(at('layout-strings', 'components', 'schemas', 'OrgContextOut', 'properties', 'name')).not.toEqual([]);
  });

  test('an integer without maximum', () => {
    expect(at('layout-integers', 'components', 'schemas', 'BillingOut', 'properties', 'spend_budget_cents')).not.toEqual([]);
  });

  test('an array without maxItems', () => {
    expect(at('layout-arrays', 'components', 'schemas', 'OperationList', 'properties', 'items')).not.toEqual([]);
  });

  test('an object without additionalProperties: false', () => {
    expect(at('layout-objects', 'components', 'schemas', 'OperationRef')).not.toEqual([]);
  });

  test('a GET that asks for the write scope', () => {
    expect(at('layout-scope', 'paths', '/v1/orgs/{org}/compute/vms', 'get', 'x-required-scope')).not.toEqual([]);
  });

  test('a POST without the Idempotency-Key parameter', () => {
    expect(at('layout-idempotency', 'paths', '/v1/orgs/{org}/operations/{operation_id}/cancel', 'post')).not.toEqual([]);
  });

  test('an operation missing a status, and an error response written inline', () => {
    expect(at('layout-statuses', 'paths', '/v1/orgs/{org}/billing', 'get', 'responses')).not.toEqual([]);
    expect(at('layout-statuses', 'paths', '/v1/orgs/{org}/api-tokens', 'get', 'responses', '404')).not.toEqual([]);
  });

  test('a media type with example: instead of named examples', () => {
    expect(
      at('layout-examples', 'paths', '/v1/orgs/{org}/billing', 'get', 'responses', '200', 'content', 'application/json', 'example'),
    ).not.toEqual([]);
  });

  test('nothing else: every finding is one of the planted ones', () => {
    const plantedRoots = [
      ['components', 'schemas', 'ApiTokenCreateRequest'],
      ['components', 'schemas', 'OrgContextOut'],
      ['components', 'schemas', 'BillingOut'],
      ['components', 'schemas', 'OperationList'],
      ['components', 'schemas', 'OperationRef'],
      ['paths', '/v1/orgs/{org}/compute/vms'],
      ['paths', '/v1/orgs/{org}/operations/{operation_id}/cancel'],
      ['paths', '/v1/orgs/{org}/billing'],
      ['paths', '/v1/orgs/{org}/api-tokens'],
    ];
    const unexpected = findings.filter(
      (finding) => !plantedRoots.some((root) => root.every((segment, index) => finding.path[index] === segment)),
    );
    expect(unexpected).toEqual([]);
  });
});

describe('the root layout rule', () => {
  const root = readFileSync(path.join(repoRoot, 'spec', 'openapi.yaml'), 'utf8');

  test('the contract as it is follows it', () => {
    expect(rootLayoutFindings(root)).toEqual([]);
  });

  test('a path method written inline, or pointing outside resources/<area>/, is found', () => {
    const inline = root.replace(
      '    get:\n      $ref: resources/health/getHealth.yaml',
      '    get:\n      operationId: getHealth\n      responses: {}',
    );
    expect(rootLayoutFindings(inline)).toEqual([
      { where: 'spec/openapi.yaml#/paths//healthz/get', message: 'a path method is only a $ref to its operation file' },
    ]);
    const elsewhere = root.replace('$ref: resources/health/getReadiness.yaml', '$ref: shared/getReadiness.yaml');
    expect(rootLayoutFindings(elsewhere)[0]?.message).toMatch(/resources\/<area>\/<operationId>\.yaml/);
  });
});
