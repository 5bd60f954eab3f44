// Real resources for the fuzzer to aim at, made through the API as any client would: an SSH key,
// an instance, a public IP, a scheduled restart, a bucket, an S3 access key, an API token and a
// console operation. Their ids become hints, so that mutated requests reach the handlers rather
// than stopping at 404. Request bodies start from the contract's own examples.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { FuzzContract } from './contract.ts';
import type { FuzzTarget, NextPage } from './draft.ts';
import type { JsonBody } from './json-text.ts';

interface Credentials {
  baseUrl: string;
  orgId: string;
  ownerKey: string;
}

/** Names must be unique in the organization: generated names are; the examples' are not. */
const NOT_HINTED = ['name'];

export async function createFixtures(contract: FuzzContract, credentials: Credentials): Promise<FuzzTarget> {
  const api = apiOf(credentials);
  const example = (operationId: string) =>
    structuredClone(contract.operations.find((operation) => operation.operationId === operationId)?.body?.examples[0] ?? {}) as Record<
      string,
      JsonBody
    >;
  const suffix = randomBytes(3).toString('hex');

  const sshKeyName = `fuzz-key-${suffix}`;
  const sshKey = await api.expect(201, 'POST', '/compute/ssh-keys', { name: sshKeyName, public_key: ed25519PublicKey() });
  const vm = await api.expect(202, 'POST', '/compute/vms', { ...example('createVm'), name: `fuzz-vm-${suffix}`, ssh_keys: [sshKeyName] });
  await api.waitForOperation(vm.operation.id);
  const publicIp = await api.expect(202, 'POST', '/compute/public-ips', example('allocatePublicIp'));
  await api.waitForOperation(publicIp.operation.id);
  const schedule = await api.expect(201, 'POST', `/compute/vms/${vm.vm.id}/scheduled-actions`, example('scheduleVmRestart'));
  const bucket = await api.expect(202, 'POST', '/s3/buckets', { ...example('createBucket'), name: `fuzz-bucket-${suffix}` });
  await api.waitForOperation(bucket.operation.id);
  const accessKey = await api.expect(202, 'POST', '/s3/access-keys');
  await api.waitForOperation(accessKey.operation.id);
  const token = await api.expect(201, 'POST', '/api-tokens', {
    ...example('createApiToken'),
    name: `fuzz token ${suffix}`,
    expires_at: null,
  });
  const consoleRequest = await api.expect(202, 'POST', `/compute/vms/${vm.vm.id}/console`);
  await api.waitForOperation(consoleRequest.operation.id);
  const invoices = await api.expect(200, 'GET', '/invoices?limit=1');

  const real: Record<string, unknown[]> = {
    vm_id: [vm.vm.id],
    public_ip_id: [publicIp.public_ip.id],
    schedule_id: [schedule.id],
    ssh_key_id: [sshKey.id],
    bucket_id: [bucket.bucket.id],
    key_id: [accessKey.access_key.id],
    token_id: [token.token.id],
    operation_id: [vm.operation.id, consoleRequest.operation.id, bucket.operation.id],
    operation: [consoleRequest.operation.id],
    invoice_id: invoices.items.map((invoice: { id: string }) => invoice.id),
    'ssh_keys[]': [sshKeyName],
    public_key: [ed25519PublicKey()],
  };
  const hints = new Map<string, unknown[]>([...contract.exampleValues].filter(([name]) => !NOT_HINTED.includes(name)));
  for (const [name, values] of Object.entries(real)) if (values.length > 0) hints.set(name, values);

  const target: FuzzTarget = { ...credentials, hints, cursors: new Map() };
  return { ...target, cursors: await firstCursors(contract, target, api) };
}

/** For every list, a real `next_cursor` (asked with limit=1), where the list has a second page. */
async function firstCursors(contract: FuzzContract, target: FuzzTarget, api: Api): Promise<Map<string, NextPage>> {
  const cursors = new Map<string, NextPage>();
  for (const operation of contract.operations) {
    if (operation.method !== 'GET' || !operation.parameters.some((parameter) => parameter.name === 'cursor')) continue;
    let path = operation.pathTemplate.replace(/^\/v1\/orgs\/\{org\}/, '');
    for (const parameter of operation.parameters.filter((candidate) => candidate.in === 'path' && candidate.name !== 'org')) {
      path = path.replace(`{${parameter.name}}`, String(target.hints.get(parameter.name)?.[0]));
    }
    const filters = operation.parameters
      .filter((candidate) => candidate.in === 'query' && candidate.required)
      .map((parameter): [string, string] => [parameter.name, encodeURIComponent(String(target.hints.get(parameter.name)?.[0]))]);
    const page = await api.call('GET', `${path}?${[...filters, ['limit', '1']].map(([name, value]) => `${name}=${value}`).join('&')}`);
    if (page.status === 200 && typeof page.body?.next_cursor === 'string')
      cursors.set(operation.operationId, { cursor: page.body.next_cursor, filters });
  }
  return cursors;
}

interface Api {
  call(method: string, orgPath: string, body?: unknown): Promise<{ status: number; body: any; text: string }>;
  expect(status: number, method: string, orgPath: string, body?: unknown): Promise<any>;
  waitForOperation(operationId: string): Promise<void>;
}

function apiOf({ baseUrl, orgId, ownerKey }: Credentials): Api {
  const api: Api = {
    async call(method, orgPath, body) {
      const headers: Record<string, string> = { Authorization: `Bearer ${ownerKey}` };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const response = await fetch(`${baseUrl}/v1/orgs/${orgId}${orgPath}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, text, body: text ? JSON.parse(text) : undefined };
    },
    async expect(status, method, orgPath, body) {
      const response = await api.call(method, orgPath, body);
      if (response.status !== status)
        throw new Error(`fuzz fixture ${method} ${orgPath}: expected ${status}, got ${response.status} ${response.text}`);
      return response.body;
    },
    async waitForOperation(operationId) {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const operation = await api.expect(200, 'GET', `/operations/${operationId}`);
        if (operation.finished_at !== null) {
          if (operation.state !== 'succeeded')
            throw new Error(`fuzz fixture: operation ${operation.type} ended ${operation.state}: ${operation.error_detail}`);
          return;
        }
        if (Date.now() > deadline) throw new Error(`fuzz fixture: operation ${operationId} still ${operation.state} after 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
  return api;
}

/** A fresh OpenSSH ed25519 public key line. */
function ed25519PublicKey(): string {
  const field = (data: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data]);
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
  const blob = Buffer.concat([field(Buffer.from('ssh-ed25519')), field(Buffer.from(jwk.x!, 'base64url'))]);
  return `ssh-ed25519 ${blob.toString('base64')} fuzz@example`;
}
