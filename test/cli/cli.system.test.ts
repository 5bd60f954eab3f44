// The `cloud` command as a user runs it: a process against a real server, by names, with its help,
// tables, contexts, confirmations and exit codes.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { vmRequest } from '../server/areas/compute/fixtures.ts';
import { newHome, runCloud, type CloudOptions, type Ran } from './support.ts';

let server: TestServer;
beforeAll(async () => {
  // Metering every 200 ms: the demo organization's invoices are issued by the billing run, which
  // by default comes once a minute.
  server = await startTestServer({ SIM_FAULTS: 'hypervisor.createServer@doomed-*=permanent', METERING_INTERVAL_MS: '200' });
});
afterAll(() => server?.close());

/** The CLI with the server's address and owner key in its environment, and no organization: it learns it. */
const cloud = (args: string[], options: CloudOptions = {}): Promise<Ran> =>
  runCloud(args, { ...options, env: { CLOUD_BASE_URL: server.url, CLOUD_API_KEY: server.org.ownerKey, ...options.env } });

const vmFlags = (name: string, changes: Parameters<typeof vmRequest>[0] = {}) => {
  const request = vmRequest({ name, ...changes });
  return [
    '--name',
    name,
    '--image',
    request.image,
    '--region',
    request.region,
    '--vcpus',
    String(request.vcpus),
    '--memory-mb',
    String(request.memory_mb),
    '--disk-gb',
    String(request.disk_gb),
    '--storage-pool',
    request.storage_pool,
    '--network-profile',
    request.network_profile,
  ];
};

async function runningVm(name: string): Promise<string> {
  const created = await server.org.call('POST', '/compute/vms', { body: vmRequest({ name }) });
  expect(created.status, created.text).toBe(202);
  await server.waitForOperation(server.org, created.body.operation.id);
  return created.body.vm.id as string;
}

describe('start-up', () => {
  test("a command keeps the CLI's compiled modules in Node's compile cache (under TMPDIR), for the commands after it", async () => {
    const temporary = newHome();
    const ran = await cloud(['help'], { env: { TMPDIR: temporary } });
    expect(ran.code, ran.stderr).toBe(0);
    // Node's default folder (under TMPDIR) holds a cache for this Node's version, with entries.
    const cache = path.join(temporary, 'node-compile-cache');
    const entries = readdirSync(cache, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    expect(entries.length).toBeGreaterThan(0);
  });
});

describe('help, from the contract', () => {
  test('`cloud help vm create` and `cloud vm create --help` print the same page: every flag, its type, required or not, default, example', async () => {
    const [viaHelp, viaFlag] = await Promise.all([cloud(['help', 'vm', 'create']), cloud(['vm', 'create', '--help'])]);
    expect(viaHelp.code).toBe(0);
    expect(viaFlag.code).toBe(0);
    expect(viaFlag.stdout).toBe(viaHelp.stdout);
    const page = viaHelp.stdout;
    expect(page).toMatch(/^Create an instance$/m);
    const fields = Object.keys(
      (
        JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'generated', 'openapi.json'), 'utf8')) as {
          components: { schemas: Record<string, { properties: object }> };
        }
      ).components.schemas.VmCreateRequest!.properties,
    );
    for (const field of fields) expect(page).toContain(`--${field.replace(/_/g, '-')} <`);
    expect(page).toMatch(/^ {2}--memory-mb <integer 512\.\.262144> {2}required, no default$/m);
    expect(page).toMatch(/^ {6}example: --memory-mb 4096$/m);
    expect(page).toMatch(/^ {2}--workload-type <string, one of customer\|infra> {2}optional/m);
    expect(page).toMatch(/^ {2}--labels <key=value pairs.*> {2}optional/m);
    expect(page).toMatch(/^ {2}cloud vm create --name web-1 --image ubuntu-24.04 .*--memory-mb 4096 .*--wait$/m);
    const list = await cloud(['vm', 'list', '--help']);
    expect(list.stdout).toMatch(/^ {2}--limit <integer 1\.\.200> {2}optional, default: 50$/m);
    const get = await cloud(['help', 'vm', 'get']);
    expect(get.stdout).toMatch(/^ {2}cloud vm get <vm> \[flags\]$/m);
    expect(get.stdout).toContain("The instance's name or id.");
  });

  test('a mistyped command, flag, value or column gets "did you mean"; exit 1 and nothing sent', async () => {
    const verb = await cloud(['vm', 'lst']);
    expect(verb.code).toBe(1);
    expect(verb.stderr).toContain('no command "vm lst"; did you mean vm list?');
    const group = await cloud(['bukcet', 'list']);
    expect(group.stderr).toContain('did you mean bucket?');
    const flag = await cloud(['vm', 'create', ...vmFlags('typo-1'), '--memory', '1024']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('unknown flag --memory for vm create; did you mean --memory-mb?');
    const value = await cloud(['vm', 'list', '--state', 'runing']);
    expect(value.stderr).toContain('did you mean running?');
    const column = await cloud(['vm', 'list', '--columns', 'name,stat']);
    expect(column.stderr).toContain('--columns: no column "stat"; did you mean state?');
    // A plural names its group.
    expect((await cloud(['vms', 'list'])).code).toBe(0);
    const missing = await cloud(['vm', 'create', '--name', 'x']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/vm create needs --image <string>, --region <string>, --vcpus <integer 1\.\.64>, --memory-mb/);
    expect((await server.org.call('GET', '/compute/vms')).body.items.map((vm: { name: string }) => vm.name)).not.toContain('typo-1');
  });
});

describe('output', () => {
  test('vm list shows what people look for (state, region, address, age), never the internal ids; --columns and --no-header choose', async () => {
    await runningVm('cols-1');
    const listed = await cloud(['vm', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    expect(header!.split(/\s+/)).toEqual(['NAME', 'STATE', 'REGION', 'IMAGE', 'VCPUS', 'MEMORY', 'DISK', 'IPV4', 'AGE', 'ID']);
    expect(rows.find((row) => row.startsWith('cols-1 '))).toMatch(
      /^cols-1\s+running\s+fra1\s+ubuntu-24\.04\s+1\s+1 GB\s+20 GB\s+\d+\.\d+\.\d+\.\d+\S*\s+\d+[smhd]\s+[0-9a-f-]{36}$/,
    );
    const chosen = await cloud(['vm', 'list', '--columns', 'name,state,labels', '--no-header']);
    expect(chosen.stdout.split('\n')).toContain('cols-1  running  {}');
    expect(chosen.stdout).not.toMatch(/NAME/);
  });

  test('access keys show no secret-store path, invoices no signed URL; -o json and -o yaml print the answer whole', async () => {
    const created = await cloud(['access-key', 'create', '--wait']);
    expect(created.code, created.stderr).toBe(0);
    const keys = await cloud(['access-key', 'list']);
    expect(keys.stdout.split('\n')[0]!.split(/\s+/)).toEqual(['ACCESS_KEY_ID', 'STATE', 'LAST_ROTATED', 'AGE', 'ID']);
    expect(keys.stdout).not.toMatch(/secretstore|SECRETSTORE/);
    const demo = await server.createOrg('Invoiced', { demoHistory: true });
    await eventually(
      async () => ((await demo.call('GET', '/invoices')).body.items.length === 3 ? true : undefined),
      'the billing run to issue the demo invoices',
    );
    const invoices = await runCloud(['invoice', 'list'], { env: { CLOUD_BASE_URL: server.url, CLOUD_API_KEY: demo.ownerKey } });
    expect(invoices.code, invoices.stderr).toBe(0);
    expect(invoices.stdout.split('\n')[0]!.split(/\s+/)).toEqual(['ID', 'STATUS', 'PERIOD', 'TOTAL', 'AMOUNT_DUE']);
    expect(invoices.stdout).not.toMatch(/https?:\/\//);
    expect(Math.max(...invoices.stdout.split('\n').map((line) => line.length))).toBeLessThan(120);
    const json = JSON.parse((await cloud(['access-key', 'list', '-o', 'json'])).stdout);
    expect(json.items[0]).toHaveProperty('secretstore_path');
    const yaml = parseYaml((await cloud(['region', 'list', '-o', 'yaml'])).stdout);
    expect(yaml.items.map((region: { id: string }) => region.id)).toContain('fra1');
  });

  test('big integers stay exact both ways', async () => {
    const set = await cloud(['billing', 'set-budget', '--spend-budget-cents', '9223372036854775807', '--output', 'json']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('"spend_budget_cents": 9223372036854775807');
    expect((await cloud(['billing', 'get'])).stdout).toMatch(/^spend_budget_cents: 9223372036854775807$/m);
    await cloud(['billing', 'set-budget', '--spend-budget-cents', 'null']);
  });
});

describe('--wait', () => {
  test('prints the final state, read back after the operation: a table with the instance running, or the whole JSON', async () => {
    const table = await cloud(['vm', 'create', ...vmFlags('wait-table'), '--wait']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^wait-table\s+running\s+fra1\s/m);
    expect(table.stdout).toMatch(/^operation [0-9a-f-]{36} \(vm\.create\): succeeded$/m);
    expect(table.stdout).not.toContain('creating');
    expect(table.stderr).toMatch(/operation [0-9a-f-]{36} \(vm\.create\): (queued|running), attempt \d/);
    const json = await cloud(['vm', 'create', ...vmFlags('wait-json'), '--wait', '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const body = JSON.parse(json.stdout);
    expect(body.operation).toMatchObject({ type: 'vm.create', state: 'succeeded' });
    expect(body.vm).toMatchObject({ name: 'wait-json', state: 'running' });
    expect(body.vm.observed_at).not.toBeNull();
  });

  test('an operation that fails: its fixed phrase, exit 4; a refused request: the problem with the flag of each field, exit 2', async () => {
    const failed = await cloud(['vm', 'create', ...vmFlags('doomed-cli'), '--wait']);
    expect(failed.code, failed.stdout + failed.stderr).toBe(4);
    expect(failed.stderr).toMatch(/^Operation [0-9a-f-]{36} failed: /m);
    expect(failed.stderr).not.toMatch(/injected|SIM_FAULTS/);
    const refused = await cloud(['vm', 'create', ...vmFlags('x'), '--vcpus', '0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^Error: Request validation failed \(validation_failed\): /);
    expect(refused.stderr).toMatch(/^ {2}\/vcpus \(--vcpus\): /m);
    expect(refused.stderr).toMatch(/request id: req_/);
  });
});

describe('names wherever an id is asked', () => {
  test('a unique name resolves; an unknown one is exit 2; an id works as before', async () => {
    const id = await runningVm('named-1');
    const byName = await cloud(['vm', 'get', 'named-1', '-o', 'json']);
    expect(byName.code, byName.stderr).toBe(0);
    expect(JSON.parse(byName.stdout).id).toBe(id);
    expect(JSON.parse((await cloud(['vm', 'get', id, '-o', 'json'])).stdout).name).toBe('named-1');
    const unknown = await cloud(['vm', 'get', 'no-such-vm']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no instance named "no-such-vm"');
    // A body field holding an id takes a name too.
    const ip = await cloud(['public-ip', 'allocate', '--region', 'fra1', '--wait', '-o', 'json']);
    expect(ip.code, ip.stderr).toBe(0);
    const address = JSON.parse(ip.stdout).public_ip.address as string;
    const associated = await cloud(['public-ip', 'associate', address, '--vm-id', 'named-1', '--wait', '-o', 'json']);
    expect(associated.code, associated.stderr).toBe(0);
    expect(JSON.parse(associated.stdout).public_ip).toMatchObject({ address, vm_id: id, state: 'associated' });
  });

  test('an ambiguous name is an error listing the matches with their ids; nothing is done', async () => {
    const first = await server.org.call('POST', '/api-tokens', { body: { name: 'twin', scopes: ['read'] } });
    const second = await server.org.call('POST', '/api-tokens', { body: { name: 'twin', scopes: ['read'] } });
    const ran = await cloud(['api-token', 'revoke', 'twin', '--force']);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('"twin" names 2 API keys; give the id of the one you mean');
    expect(ran.stderr).toContain(first.body.token.id);
    expect(ran.stderr).toContain(second.body.token.id);
    const tokens = (await server.org.call('GET', '/api-tokens')).body.items as Array<{ name: string; revoked_at: string | null }>;
    expect(tokens.filter((token) => token.name === 'twin').map((token) => token.revoked_at)).toEqual([null, null]);
  });
});

describe('confirmation before deleting', () => {
  const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHJhbmRvbWtleWRhdGFmb3J0ZXN0aW5nMDEyMzQ1Njc4 test';
  const keyNames = async () =>
    ((await server.org.call('GET', '/compute/ssh-keys')).body.items as Array<{ name: string }>).map((item) => item.name);

  test('asks; "n" or no answer does nothing (exit 1), "y" deletes, --force does not ask', async () => {
    for (const name of ['del-a', 'del-b']) {
      const created = await cloud(['ssh-key', 'create', '--name', name, '--public-key', key.replace('test', name)]);
      expect(created.code, created.stderr).toBe(0);
    }
    const no = await cloud(['ssh-key', 'delete', 'del-a'], { input: 'n\n' });
    expect(no.code).toBe(1);
    expect(no.stderr).toContain('Delete SSH key del-a? [y/N]');
    expect(no.stderr).toContain('nothing done');
    expect((await cloud(['ssh-key', 'delete', 'del-a'])).code).toBe(1);
    expect(await keyNames()).toContain('del-a');
    const yes = await cloud(['ssh-key', 'delete', 'del-a'], { input: 'y\n' });
    expect(yes.code, yes.stderr).toBe(0);
    expect(await keyNames()).not.toContain('del-a');
    const forced = await cloud(['ssh-key', 'delete', 'del-b', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).not.toContain('[y/N]');
    expect(await keyNames()).not.toContain('del-b');
  });
});

describe('contexts', () => {
  test('create learns the organization from the key and keeps it in a file only its owner can read; list, use, delete', async () => {
    const home = newHome();
    const other = await server.createOrg('Second Org');
    // No environment: only the contexts, and no bootstrap file in the working directory.
    const inHome = (args: string[], input?: string) => runCloud(args, { cwd: home, ...(input !== undefined && { input }) });
    const created = await inHome(['context', 'create', 'acme', '--base-url', server.url], `${server.org.ownerKey}\n`);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toContain(`Acme Robotics (organization ${server.org.orgId})`);
    expect((await inHome(['context', 'create', 'second', '--base-url', server.url, '--api-key', other.ownerKey])).code).toBe(0);
    const file = path.join(home, '.config', 'cloud-platform', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      current_context: 'second',
      contexts: { acme: { org_id: server.org.orgId, org_name: 'Acme Robotics' }, second: { org_id: other.orgId } },
    });

    const listed = await inHome(['context', 'list']);
    expect(listed.stdout).toMatch(/^\*\s+second\s+Second Org\s/m);
    expect(listed.stdout).not.toContain(server.org.ownerKey);
    expect(listed.stdout).not.toContain(other.ownerKey);
    expect(JSON.parse((await inHome(['org', 'get-context', '-o', 'json'])).stdout).name).toBe('Second Org');
    expect(JSON.parse((await inHome(['org', 'get-context', '-o', 'json', '--context', 'acme'])).stdout).name).toBe('Acme Robotics');
    expect((await inHome(['context', 'use', 'acme'])).code).toBe(0);
    expect(JSON.parse((await inHome(['account', 'get', '-o', 'json'])).stdout)).toMatchObject({ org_id: server.org.orgId });

    const refused = await inHome(['context', 'create', 'bad', '--base-url', server.url, '--api-key', 'cpk_not-a-key']);
    expect(refused.code).toBe(2);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).contexts)).toEqual(['acme', 'second']);
    expect((await inHome(['context', 'delete', 'second'], 'n\n')).code).toBe(1);
    expect((await inHome(['context', 'delete', 'second'], 'y\n')).code).toBe(0);
    expect((await inHome(['context', 'use', 'secnd'])).stderr).toContain('no context "secnd"');
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).contexts)).toEqual(['acme']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  test('without any context or environment: bootstrap.json; without it either, a usage error that never shows a key', async () => {
    const project = newHome();
    mkdirSync(path.join(project, 'data'));
    writeFileSync(
      path.join(project, 'data', 'bootstrap.json'),
      JSON.stringify({ base_url: server.url, api_key: server.org.ownerKey, org_id: server.org.orgId }),
    );
    const fromBootstrap = await runCloud(['billing', 'get', '--output', 'json'], { cwd: project });
    expect(fromBootstrap.code, fromBootstrap.stderr).toBe(0);
    const nothing = await runCloud(['billing', 'get']);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/^cloud: missing a base URL/);
  });
});
