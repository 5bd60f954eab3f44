// JSON Schema validation against the contract with ajv (draft 2020-12, as OpenAPI 3.1 uses it),
// with the formats the server's validator knows. The fuzzer uses it twice: to judge whether a
// mutated request is still valid, and to check every answer against the declared schemas.
import { isLosslessNumber } from 'lossless-json';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { FuzzContract, JsonSchema } from './contract.ts';

const CONTRACT_ID = 'https://fuzz.invalid/contract.json';

export interface SchemaVerdict {
  valid: boolean;
  errors: ErrorObject[];
}

export class SchemaCheck {
  private readonly ajv: Ajv2020;
  private readonly compiled = new WeakMap<object, ValidateFunction>();

  constructor(contract: FuzzContract) {
    // strict: false lets OpenAPI's own keywords (example, x-…) pass as annotations.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    // ajv-formats is CommonJS: its plugin is the module itself, or its default under some loaders.
    const addFormats = ((formats as unknown as { default?: unknown }).default ?? formats) as unknown as (ajv: Ajv2020) => void;
    addFormats(this.ajv);
    this.ajv.addSchema(toAjvSchema({ components: contract.document.components }, false) as object, CONTRACT_ID);
  }

  /** Validates a plain JSON value (as JSON.parse reads it) against a schema of the contract. */
  check(schema: JsonSchema, value: unknown): SchemaVerdict {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(toAjvSchema(schema, true) as object);
      this.compiled.set(schema, validate);
    }
    const valid = validate(value);
    return { valid, errors: valid ? [] : [...(validate.errors ?? [])] };
  }

  validates(schema: JsonSchema, value: unknown): boolean {
    return this.check(schema, value).valid;
  }
}

/**
 * A copy of a contract schema that ajv can compile: lossless numbers become numbers (ajv compares
 * doubles, as the server's validator does), and, for a schema compiled on its own, local `$ref`s
 * point into the contract added under CONTRACT_ID.
 */
function toAjvSchema(node: unknown, rewriteRefs: boolean): unknown {
  if (isLosslessNumber(node)) return Number(node.value);
  if (Array.isArray(node)) return node.map((item) => toAjvSchema(item, rewriteRefs));
  if (node === null || typeof node !== 'object') return node;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    copy[key] =
      key === '$ref' && rewriteRefs && typeof value === 'string' && value.startsWith('#/')
        ? `${CONTRACT_ID}${value}`
        : toAjvSchema(value, rewriteRefs);
  }
  return copy;
}

/** One line per ajv error: `/errors/0/pointer must NOT have more than 512 characters`. */
export function describeErrors(errors: ErrorObject[], limit = 5): string {
  const lines = errors.slice(0, limit).map((error) => `${error.instancePath || '(root)'} ${error.message ?? error.keyword}`);
  if (errors.length > limit) lines.push(`… and ${errors.length - limit} more`);
  return lines.join('; ');
}
