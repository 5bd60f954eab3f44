// The contract's examples against their schemas: Spectral's `oas3-valid-media-example` and
// `oas3-valid-schema-example`, run by spec:lint itself (.spectral.yaml switches the two off).
//
// Spectral compiles a schema again for every object it checks: it clones the schema first, and
// caches compiled schemas by object. On this contract that was 18 of spec:lint's 23 s (229 media
// types with 350 examples, and 344 schemas with an example or a default). Here each distinct
// schema is compiled once, by its text. What is checked is Spectral's, rule for rule:
// - a media type, header or parameter with a `schema` and an `example` or `examples` (an example
//   object's `value`; one with an `externalValue` is not read) under any `content`, `headers` or
//   `parameters`: each example against the schema;
// - a schema with an `example` or a `default`, and one of `enum`, `type`, `format`, `$ref`,
//   `properties` or `items`, under `components.schemas` or any `content`, `headers` or
//   `parameters` (not a `properties` map itself): the example and the default against that schema;
// - a request body's example need not hold a `readOnly` property its schema requires, and a
//   response's a `writeOnly` one;
// - JSON Schema 2020-12 (OpenAPI 3.1), the formats of ajv-formats, unknown keywords ignored.
// `$ref`s to the document itself are followed, as Spectral resolves them first.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { localRef, nodeAt, refSegments } from './json-pointer.ts';

export interface ExampleFinding {
  rule: 'oas3-valid-media-example' | 'oas3-valid-schema-example';
  /** Where the example is, as a JSON pointer into the document. */
  where: string;
  message: string;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
type Path = ReadonlyArray<string | number>;

/**
 * `document` with every local `$ref` replaced by what it names: one object for each object of the
 * document, however many places refer to it, with `origin` saying where it is written (where a
 * finding about it is reported, as Spectral reports it).
 */
function dereferenced(document: Json): { resolved: Json; origin: WeakMap<object, Path> } {
  const origin = new WeakMap<object, Path>();
  const done = new Map<object, unknown>();
  const resolving = new Set<string>();
  const target = (ref: string): { node: unknown; path: string[] } => {
    const path = refSegments(ref) ?? [];
    const node = nodeAt(document, path);
    if (node === undefined) throw new Error(`example checks: ${ref} names nothing`);
    return { node, path };
  };
  const walk = (node: unknown, path: Path): unknown => {
    if (Array.isArray(node)) return node.map((item, index) => walk(item, [...path, index]));
    if (!isObject(node)) return node;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/')) {
      if (resolving.has(ref)) throw new Error(`example checks: ${ref} refers to itself; a circular schema needs these checks reworked`);
      resolving.add(ref);
      const named = target(ref);
      const value = walk(named.node, named.path);
      resolving.delete(ref);
      return value;
    }
    if (done.has(node)) return done.get(node);
    const copy: Json = {};
    done.set(node, copy);
    origin.set(copy, path);
    for (const [key, value] of Object.entries(node)) copy[key] = walk(value, [...path, key]);
    return copy;
  };
  return { resolved: walk(document, []) as Json, origin };
}

/** The keywords whose values are subschemas (one, a list, or a map of them). */
const ONE = [
  'not',
  'if',
  'then',
  'else',
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
];
const LIST = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', 'dependentSchemas', '$defs'];

/**
 * A copy of `schema` whose `required` lists leave out the properties marked `flag` (`readOnly` in a
 * request, `writeOnly` in a response), except under a `not`, as Spectral's relaxRequired does.
 */
function relaxed(schema: unknown, flag: 'readOnly' | 'writeOnly'): unknown {
  if (!isObject(schema)) return schema;
  const copy: Json = { ...schema };
  for (const key of ONE) if (key !== 'not' && key in copy) copy[key] = relaxed(copy[key], flag);
  for (const key of LIST) if (Array.isArray(copy[key])) copy[key] = (copy[key] as unknown[]).map((each) => relaxed(each, flag));
  for (const key of MAP)
    if (isObject(copy[key])) copy[key] = Object.fromEntries(Object.entries(copy[key]).map(([name, each]) => [name, relaxed(each, flag)]));
  if (Array.isArray(copy.required) && isObject(copy.properties)) {
    const properties = copy.properties;
    const required = (copy.required as string[]).filter((name) => !(isObject(properties[name]) && properties[name][flag] === true));
    if (required.length > 0) copy.required = required;
    else delete copy.required;
  }
  return copy;
}

const SCHEMA_KEYWORDS = ['enum', 'type', 'format', '$ref', 'properties', 'items'];
const ROOTS = new Set(['content', 'headers', 'parameters']);

export function exampleFindings(document: Json): ExampleFinding[] {
  const { resolved, origin } = dereferenced(document);
  const ajv = new Ajv2020({ allErrors: false, strict: false, allowUnionTypes: true, unicodeRegExp: false, logger: false });
  addFormats.default(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const validatorOf = (schema: unknown): ValidateFunction => {
    const text = JSON.stringify(schema);
    let validate = compiled.get(text);
    if (!validate) {
      validate = ajv.compile(isObject(schema) ? schema : {});
      compiled.set(text, validate);
    }
    return validate;
  };
  const findings: ExampleFinding[] = [];
  const check = (rule: ExampleFinding['rule'], schema: unknown, value: unknown, path: Path) => {
    const validate = validatorOf(schema);
    if (validate(value)) return;
    const [error] = validate.errors as ErrorObject[];
    findings.push({
      rule,
      where: localRef(path) + error!.instancePath,
      message: error!.message ?? 'is not valid',
    });
  };

  // Reported at most once per place, however many of Spectral's paths reach it.
  const seen = new Set<unknown>();
  const visit = (node: unknown, path: Array<string | number>, under: boolean, inSchemas: boolean): void => {
    if (Array.isArray(node)) {
      node.forEach((item, index) => visit(item, [...path, index], under, inSchemas));
      return;
    }
    if (!isObject(node)) return;
    const key = path.at(-1);
    const request = path[0] === 'paths' ? path[3] === 'requestBody' : path[1] === 'requestBodies';
    const response = path[0] === 'paths' ? path[3] === 'responses' : path[1] === 'responses';
    if (under && !seen.has(node)) {
      if (isObject(node.schema) && (node.example !== undefined || node.examples !== undefined)) {
        seen.add(node);
        const at = origin.get(node) ?? path;
        const schema = request ? relaxed(node.schema, 'readOnly') : response ? relaxed(node.schema, 'writeOnly') : node.schema;
        if ('example' in node) check('oas3-valid-media-example', schema, node.example, [...at, 'example']);
        else if (isObject(node.examples))
          for (const [name, example] of Object.entries(node.examples)) {
            if (!isObject(example) || 'externalValue' in example) continue;
            check('oas3-valid-media-example', schema, example.value, [...(origin.get(example) ?? [...at, 'examples', name]), 'value']);
          }
      }
    }
    if ((under || inSchemas) && key !== 'properties' && !seen.has(node) && (node.example !== undefined || node.default !== undefined)) {
      if (SCHEMA_KEYWORDS.some((keyword) => node[keyword] !== undefined)) {
        seen.add(node);
        const at = origin.get(node) ?? path;
        for (const field of ['example', 'default'] as const)
          if (node[field] !== undefined) check('oas3-valid-schema-example', node, node[field], [...at, field]);
      }
    }
    for (const [child, value] of Object.entries(node)) {
      const schemasRoot = path.length === 1 && path[0] === 'components' && child === 'schemas';
      visit(value, [...path, child], under || ROOTS.has(child), inSchemas || schemasRoot);
    }
  };
  visit(resolved, [], false, false);
  return findings;
}
