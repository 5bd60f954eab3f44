// Names wherever a uuid is asked: `cloud vm get web-1`. A value that is not a uuid is looked up in
// the list of its kind (by name, or by address for a public IP): one match is its id, none is an
// error naming the list, several are an error listing them (with their ids to choose from).
import type { PlatformClient } from '../client.ts';
import type { PaginatedOperationId } from '../types.ts';
import type { UntypedClient } from './io.ts';
import { table } from './output.ts';

export class NameError extends Error {
  /** 1: ambiguous (choose an id); 2: nothing has that name. */
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

interface Lookup {
  list: PaginatedOperationId;
  /** What people call one (`instance`). */
  label: string;
  /** The fields a name may match. */
  keys: string[];
  /** The schema of the list's items, for the table of matches. */
  schema: string;
  /** A name from the contract's examples, for the help. */
  example: string;
}

/** Path parameters and body fields that hold an id, and where their names are found. */
export const LOOKUPS: Record<string, Lookup> = {
  vm_id: { list: 'listVms', label: 'instance', keys: ['name'], schema: 'VmOut', example: 'web-1' },
  public_ip_id: { list: 'listPublicIps', label: 'public IP', keys: ['address'], schema: 'PublicIpOut', example: '203.0.113.10' },
  ssh_key_id: { list: 'listSshKeys', label: 'SSH key', keys: ['name', 'fingerprint'], schema: 'SshKeyOut', example: 'alice-laptop' },
  bucket_id: { list: 'listBuckets', label: 'bucket', keys: ['name'], schema: 'BucketOut', example: 'acme-backups' },
  key_id: {
    list: 'listAccessKeys',
    label: 'S3 access key',
    keys: ['objectstore_access_key_id'],
    schema: 'AccessKeyOut',
    example: 'AKCP7Q2M4X9D3F6H1J8K',
  },
  token_id: { list: 'listApiTokens', label: 'API key', keys: ['name'], schema: 'ApiTokenOut', example: 'ci-deployer' },
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function listAll(
  client: PlatformClient,
  list: PaginatedOperationId,
  signal?: AbortSignal,
): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  for await (const item of (client as unknown as UntypedClient).paginate(list, { query: { limit: 200 }, signal })) items.push(item);
  return items;
}

/** The id `value` names for `parameter` (itself when it is a uuid, or when the parameter has no list). */
export async function resolveId(client: PlatformClient, parameter: string, value: string): Promise<string> {
  const lookup = LOOKUPS[parameter];
  if (!lookup || UUID.test(value)) return value;
  const items = await listAll(client, lookup.list);
  const matches = items.filter((item) => lookup.keys.some((key) => item[key] === value));
  if (matches.length === 1) return String(matches[0]!.id);
  if (matches.length === 0) {
    throw new NameError(
      `no ${lookup.label} named "${value}" (give its name or id; the ${lookup.label}s: \`${commandOf(lookup.list)}\`)`,
      2,
    );
  }
  throw new NameError(
    `"${value}" names ${matches.length} ${lookup.label}s; give the id of the one you mean:\n${table(matches, lookup.schema)}`.trimEnd(),
    1,
  );
}

/** `listVms` → `cloud vm list` (for messages). */
const commandOf = (list: string) =>
  `cloud ${
    {
      listVms: 'vm list',
      listPublicIps: 'public-ip list',
      listSshKeys: 'ssh-key list',
      listBuckets: 'bucket list',
      listAccessKeys: 'access-key list',
      listApiTokens: 'api-token list',
    }[list] ?? list
  }`;

/** The names of a kind (for completion): each item's first key. */
export async function namesOf(
  client: PlatformClient,
  parameter: string,
  signal?: AbortSignal,
): Promise<Array<{ name: string; description: string }>> {
  const lookup = LOOKUPS[parameter];
  if (!lookup) return [];
  const items = await listAll(client, lookup.list, signal);
  return items
    .map((item) => ({
      name: String(item[lookup.keys[0]!] ?? item.id),
      description: [item.state, item.region_id].filter(Boolean).join(', '),
    }))
    .filter((entry) => entry.name !== 'null');
}
