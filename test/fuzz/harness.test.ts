// The fuzzer's own parts, without a server: the generator makes valid requests and the same bytes
// for the same seed, patterns generate matching strings, literals are judged by their exact value,
// and the oracle fails the answers it must fail.
import { describe, expect, test } from 'vitest';
import { exactIntegerOf } from '../support/fuzz/body-mutations.ts';
import { CaseGenerator } from '../support/fuzz/cases.ts';
import { loadFuzzContract, type OperationSpec } from '../support/fuzz/contract.ts';
import { validDraft, type FuzzTarget } from '../support/fuzz/draft.ts';
import { RawStringBytes, encodeJson, toPlainJson } from '../support/fuzz/json-text.ts';
import { preview, type Mutation } from '../support/fuzz/mutation.ts';
import { Oracle, routeOf } from '../support/fuzz/oracle.ts';
import { PatternGenerator } from '../support/fuzz/pattern.ts';
import { Random } from '../support/fuzz/random.ts';
import { formatRequest } from '../support/fuzz/report.ts';
import { decodeSegment } from '../support/fuzz/request-mutations.ts';
import { SchemaCheck } from '../support/fuzz/schema-check.ts';
import type { Answer } from '../support/fuzz/send.ts';
import { ValueGenerator } from '../support/fuzz/values.ts';

const contract = loadFuzzContract();
const schemas = new SchemaCheck(contract);
const values = new ValueGenerator(contract, schemas);
const target: FuzzTarget = {
  baseUrl: 'http://127.0.0.1:9',
  orgId: '3f6c1a2e-9b4d-4c7a-8e21-5d0b7f9a1c34',
  ownerKey: 'cpk_3Ol_Svxj8s6AJH9dF10S5Aq_qj3r9CwRP2hDPHeY4P8',
  hints: contract.exampleValues,
  cursors: new Map(),
};
const operation = (operationId: string) => contract.operations.find((candidate) => candidate.operationId === operationId)!;

describe('the generator', () => {
  test('makes requests the contract calls valid, for every operation', () => {
    for (const spec of contract.operations) {
      for (let index = 0; index < 25; index++) {
        const draft = validDraft(spec, target, Random.forCase(1, spec.operationId, index), values);
        const where = `${spec.operationId} case ${index}`;
        for (const parameter of spec.parameters.filter((candidate) => candidate.in === 'path')) {
          const value = decodeSegment(draft.segments[draft.parameterSegments.get(parameter.name)!]!);
          expect(schemas.check(parameter.schema, value).errors, `${where}: path ${parameter.name} = ${value}`).toEqual([]);
        }
        for (const [name, encoded] of draft.query) {
          const parameter = spec.parameters.find((candidate) => candidate.name === name && candidate.in === 'query')!;
          const value = decodeURIComponent(encoded!);
          const schema = contract.resolve(parameter.schema);
          const typed = schema.type === 'integer' ? Number(value) : schema.type === 'array' ? [value] : value;
          expect(schemas.check(parameter.schema, typed).errors, `${where}: query ${name} = ${value}`).toEqual([]);
        }
        if (spec.body)
          expect(
            schemas.check(spec.body.schema, toPlainJson(draft.body!)).errors,
            `${where}: ${encodeJson(draft.body!).toString()}`,
          ).toEqual([]);
      }
    }
  });

  test('gets values right from the schemas alone, without retries, examples or hints, nearly always', () => {
    // `valid` retries and falls back to the contract's examples; this measures the generator itself.
    for (const spec of contract.operations) {
      const schemasOf = [
        ...(spec.body ? [['body', spec.body.schema] as const] : []),
        ...spec.parameters.map((parameter) => [parameter.name, parameter.schema] as const),
      ];
      for (const [name, schema] of schemasOf) {
        const random = new Random(`${spec.operationId}/${name}`);
        let validCount = 0;
        for (let index = 0; index < 100; index++)
          if (values.isValid(schema, values.generate(schema, random, new Map(), name))) validCount++;
        expect(validCount, `${spec.operationId} ${name}: ${validCount} of 100 valid`).toBeGreaterThanOrEqual(90);
      }
    }
  });

  test('makes the same bytes for the same seed and case, and other bytes for another seed', () => {
    const generator = new CaseGenerator(contract, schemas, target);
    for (const spec of [operation('createVm'), operation('listAuditEvents'), operation('setBillingBudget')]) {
      const bytes = (seed: number, index: number) =>
        JSON.stringify(generator.generate(seed, spec, index), (_key, value) => (typeof value === 'bigint' ? `${value}n` : value));
      const first = Array.from({ length: 30 }, (_, index) => bytes(5, index));
      // Regenerated alone and out of order: each case depends on nothing generated before it.
      for (const index of [29, 3, 17, 0]) expect(bytes(5, index)).toBe(first[index]);
      expect(Array.from({ length: 30 }, (_, index) => bytes(6, index))).not.toEqual(first);
    }
  });

  test('describes a body holding a bigint (the whole body wrapped in another, as case 1270 of seed 4040404 did) instead of crashing', () => {
    const generator = new CaseGenerator(contract, schemas, target);
    const fuzzCase = generator.generate(4040404, operation('setBillingBudget'), 1270);
    expect(fuzzCase.mutation.description).toMatch(/^the body is \{"body":\{"spend_budget_cents":\d/);
    expect(preview({ spend_budget_cents: 2n ** 63n - 1n })).toBe('{"spend_budget_cents":9223372036854775807}');
  });

  test('gives every mutator that applies a turn within the first cases of an operation', () => {
    const generator = new CaseGenerator(contract, schemas, target);
    const kinds = new Set(
      Array.from({ length: 40 }, (_, index) => generator.generate(3, operation('setBillingBudget'), index).mutation.kind),
    );
    for (const kind of [
      'valid',
      'body.number-literal',
      'body.deep-nesting',
      'body.invalid-utf8',
      'body.absent',
      'body.many-errors',
      'path.percent-encoding',
      'header.content-type',
    ]) {
      expect(kinds).toContain(kind);
    }
  });

  test('generates strings that match every pattern of the contract', () => {
    const patterns = new Set<string>();
    JSON.stringify(contract.document, (key, value) => {
      if (key === 'pattern' && typeof value === 'string') patterns.add(value);
      return value;
    });
    const generator = new PatternGenerator();
    const random = new Random('patterns');
    for (const pattern of patterns) {
      const regex = new RegExp(pattern, 'u');
      for (let index = 0; index < 40; index++) {
        const text = generator.generate(pattern, random);
        expect(regex.test(text), `${pattern} ⊭ ${JSON.stringify(text)}`).toBe(true);
      }
    }
  });
});

describe('number literals', () => {
  test('are judged by their exact value, not by what a double makes of them', () => {
    expect(exactIntegerOf('1e-400')).toBeUndefined();
    expect(exactIntegerOf('7.00000000000000000001')).toBeUndefined();
    expect(exactIntegerOf('0.5')).toBeUndefined();
    expect(exactIntegerOf('1E2')).toBe(100n);
    expect(exactIntegerOf('-0')).toBe(0n);
    expect(exactIntegerOf('7.0')).toBe(7n);
    expect(exactIntegerOf('700000000000000000000e-20')).toBe(7n);
    expect(exactIntegerOf('9223372036854775808')).toBe(9223372036854775808n);
    expect(exactIntegerOf('+1')).toBeUndefined();
    expect(exactIntegerOf('01')).toBeUndefined();
  });
});

describe('the oracle', () => {
  const oracle = new Oracle(contract, schemas);
  const valid: Mutation = { kind: 'valid', description: 'valid', mustRefuse: false };
  const fuzzCase = (spec: OperationSpec, path: string, mutation = valid, method = spec.method) => ({
    seed: 1,
    operationId: spec.operationId,
    index: 0,
    mutation,
    request: { method, target: `/v1/orgs/${target.orgId}${path}`, headers: [], body: undefined },
  });
  const answer = (
    status: number,
    body: unknown,
    contentType = status >= 400 ? 'application/problem+json; charset=utf-8' : 'application/json',
  ): { answer: Answer } => ({
    answer: {
      status,
      headers: { 'content-type': contentType, 'x-request-id': 'req_1' },
      body: Buffer.from(JSON.stringify(body)),
      elapsedMs: 1,
    },
  });
  const problem = (status: number, code: string, extra: object = {}) => ({
    type: `https://docs.cloudplatform.dev/errors/${code}`,
    title: 'A title',
    status,
    detail: 'A detail.',
    code,
    request_id: 'req_1',
    ...extra,
  });
  const kinds = (failures: Array<{ kind: string }>) => failures.map((failure) => failure.kind);

  test('matches paths to operations as the contract templates them', () => {
    expect(routeOf(contract, 'GET', `/v1/orgs/${target.orgId}/billing?limit=1`)).toEqual({ operation: operation('getBilling') });
    expect(routeOf(contract, 'PUT', `/v1/orgs/${target.orgId}/billing/`)).toEqual({ operation: operation('setBillingBudget') });
    expect(routeOf(contract, 'PATCH', `/v1/orgs/${target.orgId}/billing`)).toEqual({ otherMethods: ['GET', 'PUT'] });
    expect(routeOf(contract, 'GET', `/v1/orgs/${target.orgId}//billing`)).toBeUndefined();
  });

  test('passes a declared problem and a valid success body', () => {
    const billing = operation('setBillingBudget');
    expect(
      oracle.judge(
        fuzzCase(billing, '/billing'),
        answer(400, problem(400, 'validation_failed', { errors: [{ pointer: '/spend_budget_cents', detail: 'must be integer' }] })),
      ),
    ).toEqual([]);
    expect(oracle.judge(fuzzCase(operation('listSshKeys'), '/compute/ssh-keys'), answer(200, { items: [], next_cursor: null }))).toEqual(
      [],
    );
  });

  test('fails a 5xx, an undeclared status, a broken problem, a broken success body and a 2xx to an invalid request', () => {
    const billing = operation('setBillingBudget');
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing'), answer(500, problem(500, 'internal_error'))))).toEqual(['server-error']);
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing'), answer(418, problem(418, 'teapot'))))).toEqual(['undeclared-status']);
    const tooMany = Array.from({ length: 101 }, (_, index) => ({ pointer: `/f${index}`, detail: 'unknown field' }));
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing'), answer(400, problem(400, 'validation_failed', { errors: tooMany }))))).toEqual(
      ['problem-schema'],
    );
    const longPointer = [{ pointer: `/${'x'.repeat(600)}`, detail: 'unknown field' }];
    expect(
      kinds(oracle.judge(fuzzCase(billing, '/billing'), answer(400, problem(400, 'validation_failed', { errors: longPointer })))),
    ).toEqual(['problem-schema']);
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing'), answer(400, problem(400, 'x'), 'application/json')))).toEqual([
      'problem-media-type',
    ]);
    expect(
      kinds(oracle.judge(fuzzCase(operation('listSshKeys'), '/compute/ssh-keys'), answer(200, { items: [], next_cursor: null, extra: 1 }))),
    ).toEqual(['success-schema']);
    const invalid: Mutation = { kind: 'body.number-literal', description: '/spend_budget_cents ← 1e-400', mustRefuse: true };
    const budget = {
      state: 'active',
      billing_exempt: false,
      month_to_date: { egress_gb: '0', estimated_cents: 0, storage_gb_month: '0' },
      prices: [],
      spend_budget_cents: 0,
    };
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing', invalid), answer(200, budget)))).toContain('accepted-invalid');
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing', valid, 'PATCH'), answer(405, problem(405, 'method_not_allowed'))))).toEqual([]);
    expect(kinds(oracle.judge(fuzzCase(billing, '/billing'), { error: 'ECONNRESET: socket hang up', elapsedMs: 3 }))).toEqual([
      'no-answer',
    ]);
  });

  test('fails a 400 that refuses a valid parameter, not one that refuses a rule of the body its schema cannot say', () => {
    const getVm = operation('getVm');
    const refusedPath = problem(400, 'validation_failed', { errors: [{ pointer: '/path/vm_id', detail: 'must be a uuid' }] });
    expect(kinds(oracle.judge(fuzzCase(getVm, '/compute/vms/B8A3C5D7-2E4F-4A6B-9C8D-1E3F5A7B9C20'), answer(400, refusedPath)))).toEqual([
      'refused-valid',
    ]);
    const firewall = operation('setVmFirewall');
    const hostBits = problem(400, 'validation_failed', { errors: [{ pointer: '/inbound/0/sources/0', detail: 'has host bits set' }] });
    expect(oracle.judge(fuzzCase(firewall, '/compute/vms/b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20/firewall'), answer(400, hostBits))).toEqual(
      [],
    );
  });
});

describe('the report', () => {
  test('prints the exact request, with invalid UTF-8 as hex and the owner key redacted', () => {
    const body = encodeJson({ name: new RawStringBytes(Buffer.from([0x61, 0xff])) });
    const text = formatRequest(
      { method: 'POST', target: '/v1/orgs/x/api-tokens', headers: [['Authorization', `Bearer ${target.ownerKey}`]], body },
      target.ownerKey,
    );
    expect(text).toContain('Authorization: Bearer <owner key>');
    expect(text).not.toContain(target.ownerKey);
    expect(text).toContain('not UTF-8, hex: 7b 22 6e 61 6d 65 22 3a 22 61 ff 22 7d');
  });
});
