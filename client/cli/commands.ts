// The CLI's commands, derived from the contract (the bundled document, generated/openapi.json) so
// that every operation is reachable and every flag says what the contract says: the group is the
// resource the operationId names (`createVm` → `vm`), the verb what is left of it (`create`;
// `setVmFirewall` → `vm set-firewall`). Path parameters (but `org`) are positional arguments;
// query parameters and top-level body fields are `--flags`, with their type, bounds, default,
// example and description.
import { readFileSync } from 'node:fs';

/** Resource names, longest first; a plural matches its singular. `quota` alone is the S3 quota. */
const RESOURCES = [
  'webhook-endpoint',
  'scheduled-action',
  'audit-event',
  'access-key',
  'public-ip',
  'api-token',
  'ssh-key',
  's3-quota',
  'operation',
  'readiness',
  'account',
  'invoice',
  'event',
  'billing',
  'bucket',
  'region',
  'health',
  'image',
  'quota',
  'org',
  'vm',
];
const GROUP_ALIASES: Record<string, string> = { quota: 's3-quota' };

/** A JSON Schema as the contract writes one (only what the CLI reads). */
export interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  default?: unknown;
  example?: unknown;
  examples?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
}

/** What a flag holds, as the CLI parses it: text, an exact number, true/false, a list, a key=value map, or JSON. */
export type FlagKind = 'string' | 'integer' | 'number' | 'boolean' | 'list' | 'map' | 'json';

export interface Flag {
  /** The contract's name (`memory_mb`). */
  name: string;
  /** `memory-mb` (typed `--memory-mb`). */
  flag: string;
  in: 'query' | 'body';
  required: boolean;
  nullable: boolean;
  kind: FlagKind;
  /** For people: `integer 1..64`, `string, one of general|gpu`, `list of string`. */
  type: string;
  enum: string[] | undefined;
  default: unknown;
  example: unknown;
  description: string;
}

export interface Command {
  group: string;
  verb: string;
  operationId: string;
  summary: string;
  description: string;
  method: string;
  path: string;
  /** Path parameters the user gives, in order (`vm_id`). */
  positionals: Array<{ name: string; description: string; example: unknown }>;
  flags: Flag[];
  body: { required: boolean; schemaName: string | undefined } | undefined;
  /** The response's schema name for the success status (`VmList`, `VmAccepted`). */
  responseSchema: string | undefined;
  /** The operation's first named request example, for the help's example line. */
  bodyExample: Record<string, unknown> | undefined;
  /** Query parameters' examples, for the same line. */
  paginated: boolean;
  /** No credential (health probes). */
  public: boolean;
}

interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
  required?: boolean;
  description?: string;
  example?: unknown;
  schema?: Schema;
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  security?: unknown[];
  requestBody?: {
    required?: boolean;
    content?: Record<string, { schema?: Schema; examples?: Record<string, { $ref?: string; value?: unknown }> }>;
  };
  responses?: Record<string, { $ref?: string; content?: Record<string, { schema?: Schema }> }>;
}

export interface Document {
  paths: Record<string, Record<string, Operation | Parameter[]>>;
  components: {
    parameters: Record<string, Parameter>;
    schemas: Record<string, Schema>;
    examples?: Record<string, { value?: unknown }>;
  };
}

const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

/** `createVm` → { group: 'vm', verb: 'create' }; `listVmScheduledActions` → { group: 'vm', verb: 'list-scheduled-actions' }. */
export function commandNameOf(operationId: string): { group: string; verb: string } {
  const [verb, ...rest] = kebab(operationId).split('-');
  for (let start = 0; start < rest.length; start++) {
    for (const resource of RESOURCES) {
      const words = resource.split('-');
      const candidate = rest.slice(start, start + words.length);
      if (candidate.length !== words.length) continue;
      const last = candidate[candidate.length - 1]!;
      const same =
        candidate.slice(0, -1).join('-') === words.slice(0, -1).join('-') && (last === words.at(-1) || last === `${words.at(-1)}s`);
      if (!same) continue;
      const remaining = [...rest.slice(0, start), ...rest.slice(start + words.length)];
      return { group: GROUP_ALIASES[resource] ?? resource, verb: [verb, ...remaining].join('-') };
    }
  }
  return { group: rest.join('-') || verb!, verb: verb! };
}

let document: Document | undefined;

/** The bundled contract, read once (beside the built CLI in the package: dist/generated/openapi.json). */
export function contract(): Document {
  document ??= JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8')) as Document;
  return document;
}

const refName = (ref: string) => ref.split('/').pop()!;

/** A schema with its `$ref` followed, and a nullable `anyOf: [X, null]` read as X (nullable). */
export function resolveSchema(schema: Schema | undefined): { schema: Schema; nullable: boolean; name: string | undefined } {
  let nullable = false;
  let name: string | undefined;
  let current = schema ?? {};
  for (let depth = 0; depth < 8; depth++) {
    if (current.$ref) {
      name = refName(current.$ref);
      current = contract().components.schemas[name] ?? {};
    } else if (current.anyOf) {
      nullable ||= current.anyOf.some((option) => option.type === 'null');
      current = current.anyOf.find((option) => option.type !== 'null') ?? {};
    } else break;
  }
  const types = [current.type ?? []].flat();
  return { schema: current, nullable: nullable || types.includes('null'), name };
}

const oneLine = (text: string | undefined) =>
  (text ?? '')
    .split(/\n\s*\n/)[0]!
    .replace(/\s+/g, ' ')
    .trim();

function flagOf(name: string, where: 'query' | 'body', required: boolean, raw: Schema | undefined, extra: Parameter = {}): Flag {
  const { schema, nullable } = resolveSchema(raw);
  const type = [schema.type ?? 'object'].flat().filter((candidate) => candidate !== 'null')[0] ?? 'string';
  const item = resolveSchema(schema.items).schema;
  const itemType = [item.type ?? 'object'].flat().filter((candidate) => candidate !== 'null')[0];
  const mapValues = typeof schema.additionalProperties === 'object' ? resolveSchema(schema.additionalProperties).schema : undefined;
  const kind: FlagKind =
    type === 'integer' || type === 'number' || type === 'boolean' || type === 'string'
      ? type
      : type === 'array' && itemType !== 'object' && itemType !== 'array'
        ? 'list'
        : type === 'object' && !schema.properties && mapValues?.type === 'string'
          ? 'map'
          : 'json';
  const enumValues = (schema.enum ?? item.enum)?.filter((value) => value !== null).map(String);
  const bounds =
    schema.minimum !== undefined || schema.maximum !== undefined
      ? ` ${schema.minimum ?? ''}..${schema.maximum ?? ''}`
      : schema.format && schema.format !== 'int32' && schema.format !== 'int64'
        ? ` (${schema.format})`
        : '';
  const typeText =
    kind === 'list'
      ? `list of ${itemType}${enumValues ? `, each one of ${enumValues.join('|')}` : ''} (repeat the flag, or comma-separated)`
      : kind === 'map'
        ? 'key=value pairs (repeat the flag, or comma-separated)'
        : kind === 'json'
          ? `${type} as JSON`
          : `${type}${bounds}${enumValues ? `, one of ${enumValues.join('|')}` : ''}`;
  return {
    name,
    flag: name.replace(/_/g, '-'),
    in: where,
    required,
    nullable,
    kind,
    type: nullable ? `${typeText}, or null` : typeText,
    enum: enumValues,
    default: schema.default,
    example: extra.example ?? raw?.example ?? schema.example ?? schema.examples?.[0],
    description: oneLine(extra.description ?? raw?.description ?? schema.description),
  };
}

let cached: Command[] | undefined;

/** Every operation of the contract as a command. */
export function commands(): Command[] {
  if (cached) return cached;
  const { paths, components } = contract();
  const deref = (parameter: Parameter): Parameter => (parameter.$ref ? components.parameters[refName(parameter.$ref)]! : parameter);
  const list: Command[] = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
      const operation = item[method] as Operation | undefined;
      if (!operation?.operationId) continue;
      const parameters = [...((item.parameters as Parameter[] | undefined) ?? []), ...(operation.parameters ?? [])].map(deref);
      const media = operation.requestBody?.content?.['application/json'];
      const body = media?.schema ? resolveSchema(media.schema) : undefined;
      const firstExample = Object.values(media?.examples ?? {})[0];
      const bodyExample = (firstExample?.$ref ? components.examples?.[refName(firstExample.$ref)]?.value : firstExample?.value) as
        Record<string, unknown> | undefined;
      const success = Object.entries(operation.responses ?? {}).find(([status]) => status.startsWith('2'))?.[1];
      const responseSchema = success?.content?.['application/json']?.schema?.$ref;
      list.push({
        ...commandNameOf(operation.operationId),
        operationId: operation.operationId,
        summary: operation.summary ?? '',
        description: operation.description ?? '',
        method: method.toUpperCase(),
        path,
        positionals: parameters
          .filter((parameter) => parameter.in === 'path' && parameter.name !== 'org')
          .map((parameter) => ({
            name: parameter.name!,
            description: oneLine(parameter.description ?? parameter.schema?.description),
            example: parameter.example ?? parameter.schema?.example,
          })),
        flags: [
          ...parameters
            .filter((parameter) => parameter.in === 'query')
            .map((parameter) => flagOf(parameter.name!, 'query', parameter.required === true, parameter.schema, parameter)),
          ...Object.entries(body?.schema.properties ?? {}).map(([name, schema]) =>
            flagOf(name, 'body', body?.schema.required?.includes(name) ?? false, schema),
          ),
        ],
        body: media ? { required: operation.requestBody?.required === true, schemaName: body?.name } : undefined,
        responseSchema: responseSchema ? refName(responseSchema) : undefined,
        bodyExample: bodyExample && typeof bodyExample === 'object' ? bodyExample : undefined,
        paginated: parameters.some((parameter) => parameter.name === 'cursor'),
        public: Array.isArray(operation.security) && operation.security.length === 0,
      });
    }
  }
  cached = list;
  return list;
}

export function findCommand(group: string, verb: string): Command | undefined {
  return commands().find((command) => command.group === group && command.verb === verb);
}

export function groups(): string[] {
  return [...new Set(commands().map((command) => command.group))];
}
