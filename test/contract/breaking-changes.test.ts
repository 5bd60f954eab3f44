// The breaking-change check of the contract (scripts/check-contract.ts): planted changes, on small
// documents and on the real bundle, are told apart as breaking or not, and the policy of accepted
// breaks and deprecations holds.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { diffContracts } from '../../scripts/lib/contract-diff.ts';
import { changelogSection, checkContract } from '../../scripts/lib/contract-versions.ts';
import { repoRoot } from '../../scripts/lib/run.ts';

type Doc = Record<string, any>;

/** A small contract: one list and one create of "things", with a parameter, a body, headers and an enum. */
function smallContract(): Doc {
  return {
    openapi: '3.1.0',
    info: { title: 't', version: '1.0.0' },
    paths: {
      '/v1/things': {
        get: {
          operationId: 'listThings',
          parameters: [{ name: 'state', in: 'query', required: false, schema: { type: 'string', enum: ['on', 'off'] } }],
          responses: {
            '200': {
              description: 'ok',
              headers: { 'X-Request-Id': { required: true, schema: { type: 'string' } } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ThingList' } } },
            },
            '400': { description: 'bad', content: { 'application/problem+json': { schema: { type: 'object' } } } },
          },
        },
        post: {
          operationId: 'createThing',
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ThingCreate' } } } },
          responses: {
            '202': { description: 'accepted', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
          },
        },
      },
    },
    components: {
      schemas: {
        Thing: {
          type: 'object',
          required: ['id', 'name', 'state', 'note'],
          additionalProperties: false,
          properties: {
            id: { type: 'string', format: 'uuid' },
            name: { type: 'string', maxLength: 63 },
            state: { type: 'string', enum: ['on', 'off'] },
            note: { type: ['string', 'null'], maxLength: 100 },
          },
        },
        ThingList: {
          type: 'object',
          required: ['items'],
          properties: { items: { type: 'array', maxItems: 200, items: { $ref: '#/components/schemas/Thing' } } },
        },
        ThingCreate: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 63 },
            size: { type: 'integer', minimum: 1, maximum: 100 },
            note: { type: ['string', 'null'], maxLength: 100 },
          },
        },
      },
    },
  };
}

const listPath = (doc: Doc) => doc.paths['/v1/things'];
const schemas = (doc: Doc) => doc.components.schemas;

const breakingChanges: Array<[string, (doc: Doc) => void, RegExp]> = [
  ['a removed operation', (doc) => delete listPath(doc).post, /^operation-removed POST \/v1\/things$/],
  ['a removed parameter', (doc) => (listPath(doc).get.parameters = []), /^parameter-removed GET \/v1\/things query:state$/],
  ['a removed response field', (doc) => delete schemas(doc).Thing.properties.note, /^field-removed .*200 body \/items\/\[\]\/note$/],
  ['a removed request field', (doc) => delete schemas(doc).ThingCreate.properties.size, /^field-removed POST \/v1\/things body \/size$/],
  ['a removed enum value', (doc) => (schemas(doc).Thing.properties.state.enum = ['on']), /^enum-value-removed "off" /],
  [
    'a removed enum value of a parameter',
    (doc) => (listPath(doc).get.parameters[0].schema.enum = ['on']),
    /^enum-value-removed "off" GET \/v1\/things query:state/,
  ],
  [
    'a request type narrowed (null no longer accepted)',
    (doc) => (schemas(doc).ThingCreate.properties.note.type = 'string'),
    /^type-narrowed POST \/v1\/things body \/note$/,
  ],
  [
    'a request bound narrowed',
    (doc) => (schemas(doc).ThingCreate.properties.size.maximum = 50),
    /^bound-narrowed maximum POST \/v1\/things body \/size$/,
  ],
  [
    'a request minimum raised',
    (doc) => (schemas(doc).ThingCreate.properties.name.minLength = 3),
    /^bound-narrowed minLength POST \/v1\/things body \/name$/,
  ],
  [
    'a new required request field',
    (doc) => {
      schemas(doc).ThingCreate.properties.region = { type: 'string' };
      schemas(doc).ThingCreate.required.push('region');
    },
    /^field-required-added POST \/v1\/things body \/region$/,
  ],
  [
    'an optional request field made required',
    (doc) => schemas(doc).ThingCreate.required.push('size'),
    /^field-now-required POST \/v1\/things body \/size$/,
  ],
  [
    'a new required parameter',
    (doc) => listPath(doc).get.parameters.push({ name: 'region', in: 'query', required: true, schema: { type: 'string' } }),
    /^parameter-required-added GET \/v1\/things query:region$/,
  ],
  [
    'a changed success status',
    (doc) => {
      listPath(doc).post.responses['201'] = listPath(doc).post.responses['202'];
      delete listPath(doc).post.responses['202'];
    },
    /^success-status-changed POST \/v1\/things$/,
  ],
  [
    'a removed response header',
    (doc) => delete listPath(doc).get.responses['200'].headers['X-Request-Id'],
    /^response-header-removed GET \/v1\/things 200 X-Request-Id$/,
  ],
  [
    'a response field that may now be null',
    (doc) => (schemas(doc).Thing.properties.name.type = ['string', 'null']),
    /^type-widened .*\/name$/,
  ],
  [
    'a response field no longer required',
    (doc) => (schemas(doc).Thing.required = ['id', 'name', 'state']),
    /^field-now-optional .*\/note$/,
  ],
  [
    'a new value of a closed response enum',
    (doc) => schemas(doc).Thing.properties.state.enum.push('broken'),
    /^enum-value-added "broken" .*200 body/,
  ],
  ['a renamed operationId', (doc) => (listPath(doc).get.operationId = 'listAllThings'), /^operation-id-changed GET \/v1\/things$/],
];

const additiveChanges: Array<[string, (doc: Doc) => void]> = [
  [
    'a new operation',
    (doc) => (doc.paths['/v1/things/{id}'] = { get: { operationId: 'getThing', responses: { '200': { description: 'ok' } } } }),
  ],
  ['a new optional request field', (doc) => (schemas(doc).ThingCreate.properties.labels = { type: 'object' })],
  ['a new response field', (doc) => (schemas(doc).Thing.properties.created_at = { type: 'string', format: 'date-time' })],
  [
    'a new required response field',
    (doc) => {
      schemas(doc).Thing.properties.created_at = { type: 'string', format: 'date-time' };
      schemas(doc).Thing.required.push('created_at');
    },
  ],
  [
    'a new response header',
    (doc) => (listPath(doc).get.responses['200'].headers['RateLimit-Limit'] = { required: true, schema: { type: 'integer' } }),
  ],
  ['a new enum value a request accepts', (doc) => listPath(doc).get.parameters[0].schema.enum.push('unknown')],
  [
    'a new optional parameter',
    (doc) => listPath(doc).get.parameters.push({ name: 'limit', in: 'query', required: false, schema: { type: 'integer' } }),
  ],
  ['a new error response', (doc) => (listPath(doc).get.responses['429'] = { description: 'slow down' })],
  ['a request bound widened', (doc) => (schemas(doc).ThingCreate.properties.name.maxLength = 255)],
  ['a request field that now also accepts null', (doc) => (schemas(doc).ThingCreate.properties.size.type = ['integer', 'null'])],
  ['a response bound narrowed', (doc) => (schemas(doc).Thing.properties.note.maxLength = 50)],
  ['a description reworded', (doc) => (listPath(doc).get.description = 'Lists things, newest first.')],
];

function changesAfter(mutate: (doc: Doc) => void) {
  const current = smallContract();
  mutate(current);
  return diffContracts(smallContract(), current);
}

describe('the breaking-change check on small contracts', () => {
  test.each(breakingChanges)('%s is breaking', (_name, mutate, id) => {
    const breaking = changesAfter(mutate).filter((change) => change.kind === 'breaking');
    expect(breaking.map((change) => change.id)).toContainEqual(expect.stringMatching(id));
  });

  test.each(additiveChanges)('%s is not breaking', (_name, mutate) => {
    expect(changesAfter(mutate).filter((change) => change.kind === 'breaking')).toEqual([]);
  });

  test('a contract compared with itself has no change', () => {
    expect(diffContracts(smallContract(), smallContract())).toEqual([]);
  });

  test('a new value of a response enum marked x-open-enum is additive', () => {
    const released = smallContract();
    schemas(released).Thing.properties.state['x-open-enum'] = true;
    const current = structuredClone(released);
    schemas(current).Thing.properties.state.enum.push('broken');
    const changes = diffContracts(released, current);
    expect(changes.filter((change) => change.kind === 'breaking')).toEqual([]);
    expect(changes.map((change) => change.id)).toContainEqual(expect.stringMatching(/^enum-value-added "broken"/));
  });
});

describe('the versioning policy', () => {
  const removeNote = (doc: Doc) => delete schemas(doc).Thing.properties.note;
  const withVersion = (version: string, mutate: (doc: Doc) => void = () => {}) => {
    const doc = smallContract();
    mutate(doc);
    doc.info.version = version;
    return doc;
  };

  test('an unrecorded break fails the check, naming the change and its id', () => {
    const result = checkContract({ released: smallContract(), current: withVersion('1.1.0', removeNote), accepted: [] });
    expect(result.failures).toContainEqual(
      expect.stringMatching(/^breaking: .*the field \/items\/\[\]\/note was removed\.\n {4}id: field-removed/),
    );
  });

  test('a recorded break passes only with a new major version that the contract carries', () => {
    const ids = diffContracts(smallContract(), withVersion('2.0.0', removeNote))
      .filter((change) => change.kind === 'breaking')
      .map((change) => change.id);
    expect(ids.length).toBeGreaterThan(0);
    const accepted = (version: string) => ids.map((id) => ({ id, version, reason: 'notes moved elsewhere' }));
    expect(
      checkContract({ released: smallContract(), current: withVersion('2.0.0', removeNote), accepted: accepted('2.0.0') }).failures,
    ).toEqual([]);
    const withinV1 = checkContract({ released: smallContract(), current: withVersion('1.1.0', removeNote), accepted: accepted('1.1.0') });
    expect(withinV1.failures).toContainEqual(expect.stringMatching(/a break needs a new major version/));
    const notCarried = checkContract({ released: smallContract(), current: withVersion('1.1.0', removeNote), accepted: accepted('2.0.0') });
    expect(notCarried.failures).toContainEqual(expect.stringMatching(/carried by 2.0.0, but the contract says info.version 1.1.0/));
  });

  test('a recorded break that no change matches any more fails, so the list stays true', () => {
    const result = checkContract({
      released: smallContract(),
      current: withVersion('2.0.0'),
      accepted: [{ id: 'field-removed nothing', version: '2.0.0', reason: 'r' }],
    });
    expect(result.failures).toContainEqual(expect.stringMatching(/matches no change any more/));
  });

  test('a deprecation needs a sunset at least six months after it; removal after the sunset is not a break', () => {
    const today = new Date('2026-11-23T00:00:00Z');
    const deprecate = (sunset?: string) => (doc: Doc) => {
      listPath(doc).get.deprecated = true;
      listPath(doc).get['x-deprecated-at'] = '2026-11-23';
      if (sunset) listPath(doc).get['x-sunset'] = sunset;
    };
    const check = (current: Doc, released = smallContract()) => checkContract({ released, current, accepted: [], today }).failures;
    expect(check(withVersion('1.1.0', deprecate()))).toContainEqual(expect.stringMatching(/needs x-deprecated-at and x-sunset/));
    expect(check(withVersion('1.1.0', deprecate('2027-02-01')))).toContainEqual(
      expect.stringMatching(/less than six months after x-deprecated-at/),
    );
    expect(check(withVersion('1.1.0', deprecate('2027-06-01')))).toEqual([]);

    const deprecatedRelease = withVersion('1.1.0', deprecate('2026-11-01'));
    expect(
      check(
        withVersion('1.2.0', (doc) => delete listPath(doc).get),
        deprecatedRelease,
      ),
    ).toEqual([]);
    const stillRunning = withVersion('1.1.0', deprecate('2027-06-01'));
    expect(
      check(
        withVersion('1.2.0', (doc) => delete listPath(doc).get),
        stillRunning,
      ),
    ).toContainEqual(expect.stringMatching(/was removed/));
  });
});

describe('the breaking-change check on the real contract', () => {
  const bundle = (): Doc => JSON.parse(readFileSync(path.join(repoRoot, 'generated', 'openapi.json'), 'utf8'));
  const released = (): Doc => JSON.parse(readFileSync(path.join(repoRoot, 'spec', 'released', 'v1.0.0.json'), 'utf8'));

  test('the current contract does not break clients of the released 1.0.0', () => {
    const result = checkContract({ released: released(), current: bundle(), accepted: [] });
    expect(result.failures).toEqual([]);
  });

  test('removing a field of VmOut breaks every operation that returns an instance', () => {
    const current = bundle();
    delete current.components.schemas.VmOut.properties.labels;
    const ids = diffContracts(released(), current)
      .filter((change) => change.kind === 'breaking')
      .map((change) => change.id);
    expect(ids).toContainEqual('field-removed GET /v1/orgs/{org}/compute/vms/{vm_id} 200 body /labels');
    expect(ids).toContainEqual('field-removed GET /v1/orgs/{org}/compute/vms 200 body /items/[]/labels');
    expect(ids).toContainEqual('field-removed POST /v1/orgs/{org}/compute/vms 202 body /vm/labels');
  });

  test('a new instance state in responses is breaking, a new optional create field is not', () => {
    const current = bundle();
    current.components.schemas.VmOut.properties.state.enum.push('migrating');
    current.components.schemas.VmCreateRequest.properties.description = { type: 'string', maxLength: 200 };
    const changes = diffContracts(released(), current);
    expect(changes.filter((change) => change.kind === 'breaking').map((change) => change.id)).toContainEqual(
      'enum-value-added "migrating" GET /v1/orgs/{org}/compute/vms/{vm_id} 200 body /state',
    );
    expect(changes.filter((change) => change.kind === 'breaking').some((change) => change.id.includes('/description'))).toBe(false);
    expect(changes).toContainEqual(
      expect.objectContaining({ kind: 'added', id: 'field-added POST /v1/orgs/{org}/compute/vms body /description' }),
    );
  });

  test('dropping the Retry-After header of a 429 is breaking', () => {
    const current = bundle();
    const response =
      current.components.responses.TooManyRequests ??
      Object.values(current.components.responses).find((r: any) => r.headers?.['Retry-After']);
    delete (response as Doc).headers['Retry-After'];
    expect(
      diffContracts(released(), current).some(
        (change) => change.kind === 'breaking' && /^response-header-removed .* 429 Retry-After$/.test(change.id),
      ),
    ).toBe(true);
  });
});

describe('the changelog', () => {
  test('prints the changes as CHANGELOG.md lines, grouped by kind, breaking first', () => {
    const current = smallContract();
    delete schemas(current).Thing.properties.note;
    listPath(current).get.parameters.push({ name: 'limit', in: 'query', required: false, schema: { type: 'integer' } });
    const section = changelogSection('2.0.0', '2027-01-15', diffContracts(smallContract(), current));
    expect(section.startsWith('## 2.0.0 (2027-01-15)\n\n### Breaking\n\n')).toBe(true);
    expect(section).toContain('- GET /v1/things (listThings): the 200 response: the field /items/[]/note was removed.');
    expect(section).toContain('### Added\n\n- GET /v1/things (listThings): an optional query parameter limit was added.');
    expect(section.indexOf('### Breaking')).toBeLessThan(section.indexOf('### Added'));
    expect(changelogSection('Unreleased', undefined, [])).toBe('## Unreleased\n\nNo change of the contract.\n');
  });
});
