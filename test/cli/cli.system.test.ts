// The `cloud` command as a user runs it: a process against a real server, with its exit codes.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operationRoutes } from '../../generated/operations.ts';
import { commands } from '../../client/cli/commands.ts';
import { repoRoot } from '../../scripts/lib/run.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { vmRequest } from '../server/compute/fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ SIM_FAULTS: 'hypervisor.createServer@doomed-*=permanent' });
});
afterAll(() => server?.close());

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cloud(args: string[], env: Record<string, string> = {}, cwd = mkdtempSync(path.join(tmpdir(), 'cloud-cli-'))): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'client', 'cli', 'cloud.mjs'), ...args], {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: cwd,
        CLOUD_BASE_URL: server.url,
        CLOUD_API_KEY: server.org.ownerKey,
        CLOUD_ORG: server.org.orgId,
        ...env,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const vmFlags = (name: string) => {
  const request = vmRequest({ name });
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

describe('cloud', () => {
  test('every operation of the contract is a command, each named once', () => {
    const all = commands();
    expect(all.map((command) => command.operationId).sort()).toEqual(Object.keys(operationRoutes).sort());
    expect(new Set(all.map((command) => `${command.group} ${command.verb}`)).size).toBe(all.length);
    expect(all.find((command) => command.operationId === 'createVm')).toMatchObject({ group: 'vm', verb: 'create' });
    expect(all.find((command) => command.operationId === 'listBuckets')).toMatchObject({ group: 'bucket', verb: 'list' });
  });

  test('vm create --wait follows the operation to succeeded, then prints the instance; exit 0', async () => {
    const ran = await cloud(['vm', 'create', ...vmFlags('cli-ok'), '--wait', '--output', 'json']);
    expect(ran.code, ran.stderr).toBe(0);
    const body = JSON.parse(ran.stdout);
    expect(body.operation).toMatchObject({ type: 'vm.create', state: 'succeeded' });
    expect(body.vm.name).toBe('cli-ok');
    // The progress, on stderr: the states it went through, ending with the terminal one.
    expect(ran.stderr).toMatch(/operation [0-9a-f-]{36} \(vm\.create\): (queued|running), attempt \d/);
    expect(ran.stderr.trim().split('\n').at(-1)).toMatch(/: succeeded, attempt \d+, \d+s$/);
  });

  test('--wait on an operation that fails: its fixed phrase, exit 4', async () => {
    const ran = await cloud(['vm', 'create', ...vmFlags('doomed-cli'), '--wait']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(4);
    expect(ran.stderr).toMatch(/^Operation [0-9a-f-]{36} failed: /m);
    expect(ran.stderr).not.toMatch(/injected|SIM_FAULTS/);
  });

  test('a refused request prints the problem with each field pointer; exit 2', async () => {
    const ran = await cloud(['vm', 'create', '--name', 'x', '--vcpus', '0']);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/^Error: Request validation failed \(validation_failed\): /);
    expect(ran.stderr).toMatch(/^ {2}\/vcpus: /m);
    expect(ran.stderr).toMatch(/request id: req_/);
    const json = await cloud(['vm', 'get', '00000000-0000-4000-8000-000000000000', '--output', 'json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toMatchObject({ status: 404, code: 'not_found' });
  });

  test('big integers stay exact both ways', async () => {
    const set = await cloud(['billing', 'set-budget', '--spend-budget-cents', '9223372036854775807', '--output', 'json']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('"spend_budget_cents": 9223372036854775807');
    const table = await cloud(['billing', 'get']);
    expect(table.stdout).toMatch(/^spend_budget_cents: 9223372036854775807$/m);
  });

  test('lists print as tables for people', async () => {
    const ran = await cloud(['region', 'list']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+DISK_REDUNDANCY/);
    expect(ran.stdout).toMatch(/^fra1\s/m);
  });

  test('the profile: a config file profile, bootstrap.json, and a clear usage error without either', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'cloud-cli-home-'));
    const config = path.join(home, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        default_profile: 'dev',
        profiles: { dev: { base_url: server.url, api_key: server.org.ownerKey, org_id: server.org.orgId } },
      }),
    );
    const fromConfig = await cloud(['org', 'get-context', '--output', 'json'], {
      CLOUD_BASE_URL: '',
      CLOUD_API_KEY: '',
      CLOUD_ORG: '',
      CLOUD_CONFIG: config,
    });
    expect(fromConfig.code, fromConfig.stderr).toBe(0);
    expect(JSON.parse(fromConfig.stdout).org_id).toBe(server.org.orgId);

    const project = mkdtempSync(path.join(tmpdir(), 'cloud-cli-project-'));
    const dataDir = path.join(project, 'data');
    await import('node:fs').then((fs) => fs.mkdirSync(dataDir));
    writeFileSync(
      path.join(dataDir, 'bootstrap.json'),
      JSON.stringify({ base_url: server.url, api_key: server.org.ownerKey, org_id: server.org.orgId }),
    );
    const fromBootstrap = await cloud(
      ['billing', 'get', '--output', 'json'],
      { CLOUD_BASE_URL: '', CLOUD_API_KEY: '', CLOUD_ORG: '' },
      project,
    );
    expect(fromBootstrap.code, fromBootstrap.stderr).toBe(0);

    const nothing = await cloud(['billing', 'get'], {
      CLOUD_BASE_URL: '',
      CLOUD_API_KEY: '',
      CLOUD_ORG: '',
      CLOUD_CONFIG: path.join(home, 'none.json'),
    });
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/^cloud: missing a base URL/);
    expect(nothing.stderr).not.toContain(server.org.ownerKey);
  });

  test('usage errors: unknown command, missing argument, unknown option; exit 1', async () => {
    expect((await cloud(['vm', 'fly'])).code).toBe(1);
    const missing = await cloud(['vm', 'get']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('vm get takes <vm_id>');
    const unknown = await cloud(['bucket', 'list', '--colour', 'red']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown option --colour');
  });

  test('bash completion completes groups and verbs', async () => {
    const script = (await cloud(['completion', 'bash'])).stdout;
    const complete = (words: string[]) =>
      new Promise<string>((resolve, reject) => {
        const bash = spawn('bash', [
          '-c',
          `${script}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _cloud; echo "\${COMPREPLY[*]}"`,
        ]);
        let out = '';
        bash.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        bash.on('error', reject);
        bash.on('close', () => resolve(out.trim()));
      });
    expect((await complete(['cloud', 'buc'])).split(' ')).toEqual(['bucket']);
    expect((await complete(['cloud', 'bucket', 're'])).split(' ')).toEqual(['restore']);
  });
});
