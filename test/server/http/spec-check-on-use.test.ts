// express-openapi-validator compiles its checker of an OpenAPI document only when it checks one
// (server/http/spec-check-on-use.ts): a start with validateApiSpec false no longer compiles the
// OpenAPI schema, and a check still refuses a broken document.
import { createRequire } from 'node:module';
import { afterEach, expect, test, vi } from 'vitest';
import { compileSpecCheckOnUse } from '../../../server/http/spec-check-on-use.ts';

const fromServer = createRequire(new URL('../../../server/http/spec-check-on-use.ts', import.meta.url));
const checkerModule = fromServer('express-openapi-validator/dist/framework/openapi.schema.validator.js') as {
  OpenAPISchemaValidator: new (options: { version: string; validateApiSpec: boolean }) => {
    validate(document: unknown): { errors: unknown[] };
  };
};
/** Where the library's checker makes the AJV it compiles the OpenAPI schema with. */
const ajvFactory = fromServer('express-openapi-validator/dist/framework/ajv/factory.js') as { factoryAjv: (...args: unknown[]) => unknown };

afterEach(() => void vi.restoreAllMocks());

test('it applies to the installed express-openapi-validator (on another version, read its set-up again)', () => {
  expect(compileSpecCheckOnUse()).toBe(true);
  // Once is enough: a second call leaves the first's checker in place.
  const applied = checkerModule.OpenAPISchemaValidator;
  expect(compileSpecCheckOnUse()).toBe(true);
  expect(checkerModule.OpenAPISchemaValidator).toBe(applied);
});

test('a checker that is never asked compiles nothing; asked, it checks as the library does', () => {
  compileSpecCheckOnUse();
  const factory = vi.spyOn(ajvFactory, 'factoryAjv');
  // What the library does at every set-up with validateApiSpec false: makes a checker, never calls it.
  new checkerModule.OpenAPISchemaValidator({ version: '3.1.0', validateApiSpec: false });
  expect(factory).not.toHaveBeenCalled();

  const checker = new checkerModule.OpenAPISchemaValidator({ version: '3.1.0', validateApiSpec: true });
  expect(checker.validate({ openapi: '3.1.0', paths: {} }).errors).not.toEqual([]); // no `info`
  expect(checker.validate({ openapi: '3.1.0', info: { title: 'x', version: '1' }, paths: {} }).errors).toEqual([]);
  expect(factory).toHaveBeenCalledTimes(1);
});
