import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isSafeNumber, LosslessNumber, parse } from 'lossless-json';
import { repoRoot } from '../../scripts/lib/run.ts';

export type JsonSchema = Record<string, unknown>;

export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, JsonSchema> };
  [key: string]: unknown;
}

/** The bundled contract, parsed without losing integers: numbers beyond 2^53 stay LosslessNumbers. */
export function loadBundle(): OpenApiDocument {
  const text = readFileSync(path.join(repoRoot, 'generated', 'openapi.json'), 'utf8');
  return parse(text, undefined, (value) => (isSafeNumber(value) ? Number(value) : new LosslessNumber(value))) as OpenApiDocument;
}

export interface FieldShape {
  /** `string`, `integer`, `boolean`, `number`, `object`, `array`, or `$SchemaName` for a reference. */
  type: string;
  nullable: boolean;
  format: string | undefined;
}

/** What a property schema says about its value: type (or referenced schema), nullability, format. */
export function fieldShape(schema: JsonSchema): FieldShape {
  if (typeof schema.$ref === 'string') {
    return { type: `$${schema.$ref.split('/').pop()}`, nullable: false, format: undefined };
  }
  const variants = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (variants) {
    const nonNull = variants.filter((variant) => variant.type !== 'null');
    if (nonNull.length !== 1) throw new Error(`a union of ${nonNull.length} non-null variants`);
    return { ...fieldShape(nonNull[0]!), nullable: nonNull.length < variants.length };
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  const nonNull = types.filter((type) => type !== 'null');
  if (nonNull.length !== 1) throw new Error(`type ${JSON.stringify(schema.type)}`);
  return { type: nonNull[0]!, nullable: nonNull.length < types.length, format: schema.format as string | undefined };
}
