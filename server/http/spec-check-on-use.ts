import { createRequire } from 'node:module';

/** express-openapi-validator's checker of an OpenAPI document against the OpenAPI schema. */
interface SpecChecker {
  validate(document: unknown): { errors: unknown[] };
}
type SpecCheckerClass = new (options: { version: string; validateApiSpec: boolean }) => SpecChecker;

/** The versions whose set-up this was read against (framework/index.js and openapi.schema.validator.js). */
const READ_AGAINST = /^5\.6\./;

/**
 * Has express-openapi-validator compile its checker of the contract only when it checks the
 * contract.
 *
 * At every set-up, 5.6 compiles the whole OpenAPI 3.1 schema with AJV in the checker's constructor,
 * and only then looks at `validateApiSpec`: with it false the compiled checker is never called.
 * That compile was the largest single cost of a restart in a profile (0.37 s of 2.3 s of CPU on a
 * slow day). Upstream meant `validateApiSpec: false` to skip the check entirely (PR #544).
 *
 * The server sets `validateApiSpec: false`: the contract it loads, generated/openapi.json, is
 * checked where it is made (`npm run spec:lint` and `npm run generate:check`, in CI). The checker
 * made here compiles on its first `validate`, so with the option true the check is what it was.
 *
 * Applied to the versions read (a test fails on another, to be read again); anywhere else the
 * library is left as it is, and is only slower to start.
 */
export function compileSpecCheckOnUse(): boolean {
  const fromServer = createRequire(import.meta.url);
  const { version } = fromServer('express-openapi-validator/package.json') as { version: string };
  if (!READ_AGAINST.test(version)) return false;
  const checkerModule = fromServer('express-openapi-validator/dist/framework/openapi.schema.validator.js') as {
    OpenAPISchemaValidator: SpecCheckerClass & { compiledOnUse?: true };
  };
  const Compiled = checkerModule.OpenAPISchemaValidator;
  if (Compiled.compiledOnUse) return true;
  checkerModule.OpenAPISchemaValidator = class CompiledOnUse implements SpecChecker {
    static compiledOnUse = true as const;
    readonly #options: ConstructorParameters<SpecCheckerClass>[0];
    #compiled: SpecChecker | undefined;
    constructor(options: ConstructorParameters<SpecCheckerClass>[0]) {
      this.#options = options;
    }
    validate(document: unknown): { errors: unknown[] } {
      this.#compiled ??= new Compiled(this.#options);
      return this.#compiled.validate(document);
    }
  };
  return true;
}
