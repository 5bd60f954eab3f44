// spec:lint's check of the contract's examples (scripts/lib/example-checks.ts), which stands in for
// Spectral's oas3-valid-media-example and oas3-valid-schema-example: what they find, it finds, at
// the place Spectral names.
import { describe, expect, test } from 'vitest';
import { exampleFindings } from '../../scripts/lib/example-checks.ts';

const Bucket = {
  type: 'object',
  required: ['id', 'name', 'secret'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', format: 'uuid', readOnly: true, example: '0b7c9a52-55a9-4d7e-9f5e-8f2b1c3d4e5f' },
    name: { type: 'string', maxLength: 63, example: 'logs', default: 'bucket' },
    secret: { type: 'string', writeOnly: true },
  },
};

/** A contract with one operation that takes and answers `Bucket`, with the given examples. */
function contract(examples: { request?: unknown; response?: unknown }, bucket: object = Bucket) {
  const media = (value: unknown) => ({ schema: { $ref: '#/components/schemas/Bucket' }, examples: { one: { value } } });
  return {
    openapi: '3.1.0',
    paths: {
      '/buckets': {
        post: {
          requestBody: { content: { 'application/json': media(examples.request ?? { name: 'logs', secret: 's3cr3t' }) } },
          responses: { '201': { $ref: '#/components/responses/Created' } },
        },
      },
    },
    components: {
      schemas: { Bucket: bucket },
      responses: {
        Created: {
          description: 'Created',
          content: { 'application/json': media(examples.response ?? { id: '0b7c9a52-55a9-4d7e-9f5e-8f2b1c3d4e5f', name: 'logs' }) },
        },
      },
    },
  };
}

describe("the contract's examples against their schemas", () => {
  test("examples that hold give nothing; a request's need no readOnly property, a response's no writeOnly one", () => {
    expect(exampleFindings(contract({}))).toEqual([]);
  });

  test('a media example that breaks its schema is found where it is written, once, however often it is used', () => {
    expect(exampleFindings(contract({ response: { id: 'not-a-uuid', name: 'logs' } }))).toEqual([
      {
        rule: 'oas3-valid-media-example',
        where: '#/components/responses/Created/content/application~1json/examples/one/value/id',
        message: 'must match format "uuid"',
      },
    ]);
    expect(exampleFindings(contract({ request: { name: 7, secret: 's' } }))).toEqual([
      {
        rule: 'oas3-valid-media-example',
        where: '#/paths/~1buckets/post/requestBody/content/application~1json/examples/one/value/name',
        message: 'must be string',
      },
    ]);
  });

  test("a request's example still needs a writeOnly property, and a response's a readOnly one", () => {
    expect(exampleFindings(contract({ request: { name: 'logs' } })).map((finding) => finding.message)).toEqual([
      "must have required property 'secret'",
    ]);
    expect(exampleFindings(contract({ response: { name: 'logs' } })).map((finding) => finding.message)).toEqual([
      "must have required property 'id'",
    ]);
  });

  test("a schema's example and default are held to the schema, where the schema is written", () => {
    const broken = {
      ...Bucket,
      properties: { ...Bucket.properties, name: { type: 'string', maxLength: 3, example: 'logs', default: 9 } },
    };
    expect(
      exampleFindings(
        contract({ request: { name: 'ok', secret: 's' }, response: { id: '0b7c9a52-55a9-4d7e-9f5e-8f2b1c3d4e5f', name: 'ok' } }, broken),
      ),
    ).toEqual([
      {
        rule: 'oas3-valid-schema-example',
        where: '#/components/schemas/Bucket/properties/name/example',
        message: 'must NOT have more than 3 characters',
      },
      { rule: 'oas3-valid-schema-example', where: '#/components/schemas/Bucket/properties/name/default', message: 'must be string' },
    ]);
  });

  test('a key with a slash or a tilde in it is named as a JSON pointer names it', () => {
    const labelled = {
      ...Bucket,
      properties: { ...Bucket.properties, labels: { type: 'object', additionalProperties: { type: 'string' } } },
    };
    const found = exampleFindings(contract({ request: { name: 'logs', secret: 's', labels: { 'team/owner~1': 7 } } }, labelled));
    expect(found.map((finding) => finding.where)).toEqual([
      '#/paths/~1buckets/post/requestBody/content/application~1json/examples/one/value/labels/team~1owner~01',
    ]);
  });

  test('an example kept elsewhere (externalValue) is not read', () => {
    const document = contract({});
    document.components.responses.Created.content['application/json'].examples = {
      one: { externalValue: 'https://example.com/bucket.json' },
    } as never;
    expect(exampleFindings(document)).toEqual([]);
  });
});
