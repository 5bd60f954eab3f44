// The CLI's commands, derived from the contract so that every operation is reachable: the group is
// the resource the operationId names (`createVm` → `vm`), the verb what is left of it (`create`;
// `setVmFirewall` → `vm set-firewall`). Path parameters (but `org`) are positional arguments;
// query parameters and top-level body fields are `--flags`.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { operationRoutes, type OperationId } from '../../generated/operations.ts';

/** Resource names, longest first; a plural matches its singular. `quota` alone is the S3 quota. */
const RESOURCES = [
  'scheduled-action',
  'audit-event',
  'access-key',
  'public-ip',
  'api-token',
  'ssh-key',
  's3-quota',
  'operation',
  'readiness',
  'invoice',
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

export interface Parameter {
  name: string;
  flag: string;
  required: boolean;
  type: string;
}

export interface Command {
  group: string;
  verb: string;
  operationId: OperationId;
  summary: string;
  method: string;
  path: string;
  positionals: string[];
  query: Parameter[];
  body: { required: boolean; fields: Parameter[] } | undefined;
  paginated: boolean;
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

interface RawParameter {
  $ref?: string;
  name?: string;
  in?: string;
  required?: boolean;
  schema?: { type?: string | string[] };
}

type Document = {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string;
        summary?: string;
        parameters?: RawParameter[];
        requestBody?: { required?: boolean; content?: Record<string, { schema?: { $ref?: string } }> };
      }
    >
  >;
  components: {
    parameters: Record<string, RawParameter>;
    schemas: Record<string, { properties?: Record<string, { type?: string | string[] }>; required?: string[] }>;
  };
};

let cached: Command[] | undefined;

/** Every operation of the contract as a command. */
export function commands(): Command[] {
  if (cached) return cached;
  const document = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as Document;
  const deref = (parameter: RawParameter): RawParameter =>
    parameter.$ref ? document.components.parameters[parameter.$ref.split('/').pop()!]! : parameter;
  const typeOf = (schema: { type?: string | string[] } | undefined) =>
    [schema?.type ?? 'object'].flat().filter((type) => type !== 'null')[0] ?? 'string';
  cached = (Object.keys(operationRoutes) as OperationId[]).map((operationId) => {
    const route = operationRoutes[operationId];
    const item = document.paths[route.path]!;
    const operation = item[route.method]!;
    const parameters = [...((item.parameters as RawParameter[] | undefined) ?? []), ...(operation.parameters ?? [])].map(deref);
    const schemaRef = operation.requestBody?.content?.['application/json']?.schema?.$ref;
    const bodySchema = schemaRef ? document.components.schemas[schemaRef.split('/').pop()!] : undefined;
    return {
      ...commandNameOf(operationId),
      operationId,
      summary: operation.summary ?? '',
      method: route.method.toUpperCase(),
      path: route.path,
      positionals: parameters
        .filter((parameter) => parameter.in === 'path' && parameter.name !== 'org')
        .map((parameter) => parameter.name!),
      query: parameters
        .filter((parameter) => parameter.in === 'query')
        .map((parameter) => ({
          name: parameter.name!,
          flag: kebab(parameter.name!).replace(/_/g, '-'),
          required: parameter.required === true,
          type: typeOf(parameter.schema),
        })),
      body: bodySchema
        ? {
            required: operation.requestBody?.required === true,
            fields: Object.entries(bodySchema.properties ?? {}).map(([name, schema]) => ({
              name,
              flag: name.replace(/_/g, '-'),
              required: bodySchema.required?.includes(name) ?? false,
              type: typeOf(schema),
            })),
          }
        : undefined,
      paginated: route.paginated,
    };
  });
  return cached;
}

export function findCommand(group: string, verb: string): Command | undefined {
  return commands().find((command) => command.group === group && command.verb === verb);
}
