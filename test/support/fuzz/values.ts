// Valid values from the contract's schemas. Where a real value reaches further into the server
// than a random one (an id of an existing instance, a region the catalogue knows, an SSH key
// that parses), a hint supplies it: hints come from the resources the fuzzer created and from
// the contract's own examples, and are used only when they validate against the schema.
import { isLosslessNumber } from 'lossless-json';
import type { FuzzContract, JsonSchema } from './contract.ts';
import { encodeJson, type JsonBody } from './json-text.ts';
import { PatternGenerator } from './pattern.ts';
import type { Random } from './random.ts';
import type { SchemaCheck } from './schema-check.ts';

/** Candidate values by property or parameter name (`name[]` for the items of an array). */
export type Hints = ReadonlyMap<string, readonly unknown[]>;

const INT32: [bigint, bigint] = [-(2n ** 31n), 2n ** 31n - 1n];
const INT64: [bigint, bigint] = [-(2n ** 63n), 2n ** 63n - 1n];

/** A schema bound (a number, or a lossless number beyond 2^53) as an exact bigint. */
export function exactBound(value: unknown): bigint | undefined {
  if (isLosslessNumber(value)) return BigInt(value.value);
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  return undefined;
}

/** The exact integer range a schema allows (its format's range when it gives no bounds). */
export function integerRange(schema: JsonSchema): [bigint, bigint] {
  const [formatMin, formatMax] = schema.format === 'int32' ? INT32 : INT64;
  return [exactBound(schema.minimum) ?? formatMin, exactBound(schema.maximum) ?? formatMax];
}

/** The JSON types a schema allows (`type` as a string or a list). */
export function typesOf(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type as string[];
  if (typeof schema.type === 'string') return [schema.type];
  if (schema.const !== undefined || schema.enum !== undefined) return ['string'];
  if (schema.properties || schema.additionalProperties !== undefined) return ['object'];
  return [];
}

export class ValueGenerator {
  private readonly patterns = new PatternGenerator();

  private readonly contract: FuzzContract;
  private readonly schemas: SchemaCheck;

  constructor(contract: FuzzContract, schemas: SchemaCheck) {
    this.contract = contract;
    this.schemas = schemas;
  }

  /**
   * A value valid for `schema`: generated, checked with ajv, generated again if needed; after
   * that, the first of `fallbacks` (the contract's examples) that is valid.
   */
  valid(schema: JsonSchema, random: Random, hints: Hints, name?: string, fallbacks: readonly JsonBody[] = []): JsonBody {
    for (let attempt = 0; attempt < 12; attempt++) {
      const value = this.generate(schema, random, hints, name);
      if (this.isValid(schema, value)) return value;
    }
    const fallback = fallbacks.find((candidate) => this.isValid(schema, candidate));
    if (fallback !== undefined) return fallback;
    throw new Error(`no valid value for ${name ?? 'a schema'}: ${JSON.stringify(schema).slice(0, 200)}`);
  }

  isValid(schema: JsonSchema, value: JsonBody): boolean {
    return this.schemas.validates(schema, JSON.parse(encodeJson(value).toString('utf8')));
  }

  /** One attempt at a valid value; mostly right, and checked by `valid`. */
  generate(rawSchema: JsonSchema, random: Random, hints: Hints, name?: string): JsonBody {
    const schema = this.contract.resolve(rawSchema);
    const hinted = name === undefined ? undefined : hints.get(name);
    if (hinted && hinted.length > 0 && random.chance(0.75)) {
      const usable = hinted.filter((candidate) => this.isValid(schema, candidate as JsonBody));
      if (usable.length > 0) return random.pick(usable) as JsonBody;
    }
    if (schema.const !== undefined) return schema.const as JsonBody;
    if (Array.isArray(schema.enum)) return random.pick(schema.enum as JsonBody[]);
    const variants = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
    if (variants) {
      const nonNull = variants.filter((variant) => this.contract.resolve(variant).type !== 'null');
      const chosen =
        nonNull.length < variants.length && random.chance(0.15) ? { type: 'null' } : random.pick(nonNull.length > 0 ? nonNull : variants);
      return this.generate(chosen, random, hints, name);
    }
    const types = typesOf(schema);
    const nonNull = types.filter((type) => type !== 'null');
    if (nonNull.length === 0) return null;
    if (nonNull.length < types.length && random.chance(0.15)) return null;
    switch (random.pick(nonNull)) {
      case 'string':
        return this.string(schema, random);
      case 'integer':
        return this.integer(schema, random);
      case 'number':
        return random.int(0, 1000) / 4;
      case 'boolean':
        return random.chance(0.5);
      case 'array':
        return this.array(schema, random, hints, name);
      case 'object':
        return this.object(schema, random, hints);
      default:
        return null;
    }
  }

  private string(schema: JsonSchema, random: Random): string {
    const minLength = (schema.minLength as number | undefined) ?? 0;
    const maxLength = (schema.maxLength as number | undefined) ?? minLength + 40;
    switch (schema.format) {
      case 'uuid':
        return random.uuid();
      case 'date-time':
        return dateTime(random);
      case 'uri':
        return `https://example.com/${random.uuid()}`;
    }
    if (typeof schema.pattern === 'string') {
      for (let attempt = 0; attempt < 10; attempt++) {
        const text = this.patterns.generate(schema.pattern, random, Math.max(8, minLength));
        const length = [...text].length;
        if (length >= minLength && length <= maxLength) return text;
      }
    }
    const length = random.int(minLength, Math.min(maxLength, minLength + 16));
    return Array.from({ length }, () => String.fromCharCode(random.int(0x61, 0x7a))).join('');
  }

  private integer(schema: JsonSchema, random: Random): number | bigint {
    const [min, max] = integerRange(schema);
    const value = random.weighted<() => bigint>([
      [1, () => min],
      [1, () => max],
      [4, () => random.bigint(min, min + 1000n < max ? min + 1000n : max)],
      [2, () => random.bigint(min, max)],
    ])();
    return Number.isSafeInteger(Number(value)) && BigInt(Number(value)) === value ? Number(value) : value;
  }

  private array(schema: JsonSchema, random: Random, hints: Hints, name: string | undefined): JsonBody[] {
    const minItems = (schema.minItems as number | undefined) ?? 0;
    const maxItems = (schema.maxItems as number | undefined) ?? minItems + 3;
    const count = random.int(minItems, Math.min(maxItems, minItems + 3));
    const items: JsonBody[] = [];
    const seen = new Set<string>();
    for (let attempt = 0; items.length < count && attempt < count * 4; attempt++) {
      const item = this.generate(schema.items as JsonSchema, random, hints, name === undefined ? undefined : `${name}[]`);
      const key = encodeJson(item).toString('utf8');
      if (schema.uniqueItems === true && seen.has(key)) continue;
      seen.add(key);
      items.push(item);
    }
    return items;
  }

  private object(schema: JsonSchema, random: Random, hints: Hints): { [key: string]: JsonBody } {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((schema.required as string[] | undefined) ?? []);
    const result: { [key: string]: JsonBody } = {};
    const optional = Object.keys(properties).filter((key) => !required.has(key));
    const minProperties = (schema.minProperties as number | undefined) ?? 0;
    for (const key of Object.keys(properties)) {
      if (required.has(key) || random.chance(0.5)) result[key] = this.generate(properties[key]!, random, hints, key);
    }
    while (Object.keys(result).length < minProperties && optional.some((key) => !(key in result))) {
      const key = random.pick(optional.filter((candidate) => !(candidate in result)));
      result[key] = this.generate(properties[key]!, random, hints, key);
    }
    const additional = schema.additionalProperties;
    if (additional && typeof additional === 'object' && Object.keys(properties).length === 0) {
      const maxProperties = (schema.maxProperties as number | undefined) ?? 4;
      const count = random.int(0, Math.min(3, maxProperties));
      const keySchema = (schema.propertyNames as JsonSchema | undefined) ?? { type: 'string', pattern: '^[a-z]{1,12}$' };
      for (let index = 0; index < count; index++)
        result[this.string(keySchema, random)] = this.generate(additional as JsonSchema, random, hints);
    }
    this.applyConditions(schema, result, random, hints);
    return result;
  }

  /**
   * `allOf: [{if, then}]`: where the object meets an `if`, it is made to meet the `then`
   * (required properties added; `type: null` and `not: {type: null}` honoured).
   */
  private applyConditions(schema: JsonSchema, result: { [key: string]: JsonBody }, random: Random, hints: Hints): void {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    for (const branch of (schema.allOf as JsonSchema[] | undefined) ?? []) {
      const condition = branch.if as JsonSchema | undefined;
      const then = branch.then as JsonSchema | undefined;
      if (!condition || !then || !this.isValid(condition, result)) continue;
      for (const key of (then.required as string[] | undefined) ?? []) {
        if (!(key in result) && properties[key]) result[key] = this.nonNull(properties[key], random, hints, key);
      }
      for (const [key, rule] of Object.entries((then.properties ?? {}) as Record<string, JsonSchema>)) {
        if (rule.type === 'null' && key in result) {
          if (random.chance(0.5)) delete result[key];
          else result[key] = null;
        } else if ((rule.not as JsonSchema | undefined)?.type === 'null' && key in result && result[key] === null && properties[key]) {
          result[key] = this.nonNull(properties[key], random, hints, key);
        }
      }
    }
  }

  private nonNull(schema: JsonSchema, random: Random, hints: Hints, name: string): JsonBody {
    for (let attempt = 0; attempt < 10; attempt++) {
      const value = this.generate(schema, random, hints, name);
      if (value !== null) return value;
    }
    return null;
  }
}

/** A timestamp in the 2030s (in the future, as `run_at` and `expires_at` need), in a few spellings. */
function dateTime(random: Random): string {
  const pad = (value: number, width = 2) => String(value).padStart(width, '0');
  const date = `${random.int(2030, 2039)}-${pad(random.int(1, 12))}-${pad(random.int(1, 28))}T${pad(random.int(0, 23))}:${pad(random.int(0, 59))}:${pad(random.int(0, 59))}`;
  return random.weighted([
    [3, `${date}Z`],
    [1, `${date}.${pad(random.int(0, 999), 3)}Z`],
    [1, `${date}+0${random.int(1, 9)}:00`],
  ]);
}
