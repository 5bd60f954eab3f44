// The contract as the server loads it (generated/openapi.runtime.json): the bundle without its
// prose and examples. Every rule the validator or the server reads must still be there, unchanged.
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import path from 'node:path';
import * as OpenApiValidator from 'express-openapi-validator';
import { describe, expect, test } from 'vitest';
import { runtimeContract } from '../../scripts/lib/runtime-contract.ts';
import { CONTRACT_PATH } from '../../server/core/contract-document.ts';

const generated = path.join(import.meta.dirname, '..', '..', 'generated');
const bundleText = readFileSync(path.join(generated, 'openapi.json'), 'utf8');
const runtimeText = readFileSync(path.join(generated, 'openapi.runtime.json'), 'utf8');
const bundle = JSON.parse(bundleText) as Record<string, unknown>;
const runtime = JSON.parse(runtimeText) as Record<string, unknown>;

/** Words that, as a path's segment, name prose or examples (or, under `properties`, a field so named). */
const PROSE = new Set(['description', 'summary', 'example', 'examples', 'externalDocs', '$comment', 'x-codeSamples']);

/** Every leaf of a JSON document by its path. */
function leaves(node: unknown, at: string[] = [], into = new Map<string, unknown>()): Map<string, unknown> {
  if (node !== null && typeof node === 'object') {
    const entries = Array.isArray(node) ? node.map((item, index) => [String(index), item] as const) : Object.entries(node);
    if (entries.length === 0) into.set(JSON.stringify(at), Array.isArray(node) ? '[]' : '{}');
    for (const [key, value] of entries) leaves(value, [...at, key], into);
  } else into.set(JSON.stringify(at), node);
  return into;
}

describe('generated/openapi.runtime.json', () => {
  test('is what the server loads', () => {
    expect(path.resolve(CONTRACT_PATH)).toBe(path.join(generated, 'openapi.runtime.json'));
  });

  test('holds every leaf of the bundle that is not prose or an example, unchanged, and nothing else', () => {
    const ofBundle = leaves(bundle);
    const ofRuntime = leaves(runtime);
    const rules = [...ofBundle].filter(([at]) => !(JSON.parse(at) as string[]).some((segment) => PROSE.has(segment)));
    expect(rules.length).toBeGreaterThan(4_000);
    const lost = rules.filter(([at, value]) => !ofRuntime.has(at) || ofRuntime.get(at) !== value).map(([at]) => at);
    expect(lost).toEqual([]);
    const invented = [...ofRuntime].filter(([at, value]) => ofBundle.get(at) !== value).map(([at]) => at);
    expect(invented).toEqual([]);
    // A quarter of the bundle or so: what the validator no longer parses and walks at every start.
    expect(runtimeText.length).toBeLessThan(bundleText.length / 2);
  });

  test('keeps the big integer literals exact', () => {
    for (const literal of bundleText.match(/\b\d{17,}\b/g) ?? []) expect(runtimeText).toContain(literal);
    expect(runtimeText).toContain('9223372036854775807');
  });

  test('is a valid OpenAPI 3.1 document, as express-openapi-validator checks one', async () => {
    // validateApiSpec: true checks the document against the OpenAPI schema on the first request.
    const app = express();
    app.use(OpenApiValidator.middleware({ apiSpec: CONTRACT_PATH, validateApiSpec: true, validateRequests: true }));
    app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
    let failure: unknown;
    app.use(((error, _req, res, _next) => {
      failure = error;
      res.status(500).end();
    }) as ErrorRequestHandler);
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`);
      expect(failure).toBeUndefined();
      expect(response.status).toBe(200);
    } finally {
      server.close();
    }
  });
});

describe('runtimeContract', () => {
  test('leaves out descriptions, summaries and examples; keeps fields so named, and a response description', () => {
    const document = {
      openapi: '3.1.0',
      info: { title: 'T', version: '1', description: 'prose' },
      paths: {
        '/things': {
          get: {
            summary: 'List',
            description: 'prose',
            parameters: [{ name: 'limit', in: 'query', description: 'prose', example: 5, schema: { type: 'integer', default: 20 } }],
            responses: {
              '200': {
                description: 'OK',
                content: {
                  'application/json': {
                    schema: { $ref: '#/components/schemas/Thing' },
                    examples: { one: { $ref: '#/components/examples/Thing' } },
                  },
                },
              },
            },
          },
        },
      },
      components: {
        schemas: {
          Thing: {
            type: 'object',
            description: 'prose',
            examples: [{ description: 'a thing' }],
            properties: {
              description: { type: 'string', description: 'prose', default: 'none' },
              summary: { type: 'object', default: { description: 'data, not prose' } },
            },
          },
        },
        examples: { Thing: { value: { description: 'a thing' } } },
      },
    };
    expect(runtimeContract(document)).toEqual({
      openapi: '3.1.0',
      info: { title: 'T', version: '1' },
      paths: {
        '/things': {
          get: {
            parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', default: 20 } }],
            responses: {
              '200': { description: 'OK', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
            },
          },
        },
      },
      components: {
        schemas: {
          Thing: {
            type: 'object',
            properties: {
              description: { type: 'string', default: 'none' },
              summary: { type: 'object', default: { description: 'data, not prose' } },
            },
          },
        },
      },
    });
  });

  test('refuses to leave a $ref pointing at what it left out', () => {
    const document = {
      openapi: '3.1.0',
      components: { schemas: { Thing: { $ref: '#/components/examples/Thing' } }, examples: { Thing: { value: 1 } } },
    };
    expect(() => runtimeContract(document)).toThrow(/#\/components\/examples\/Thing/);
  });
});
