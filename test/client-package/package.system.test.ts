// The client as another project gets it: packed with `npm pack` (which builds it), installed from
// the tarball into an empty project, compiled there with TypeScript, and run against a real server;
// and the `cloud` command as a user gets it, installed globally from the same tarball into an
// empty prefix and run from an empty folder.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bin, repoRoot, run } from '../../scripts/lib/run.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let project: string;
let packDir: string;
let prefix: string;

beforeAll(async () => {
  server = await startTestServer();
  packDir = mkdtempSync(path.join(tmpdir(), 'client-pack-'));
  project = mkdtempSync(path.join(tmpdir(), 'client-user-'));
  prefix = mkdtempSync(path.join(tmpdir(), 'client-global-'));
}, 120_000);

afterAll(async () => {
  await server?.close();
  for (const dir of [packDir, project, prefix]) if (dir) rmSync(dir, { recursive: true, force: true });
});

const SNIPPET = `import { createPlatformClient, ProblemError, type Schemas } from '@cloud-platform/client';

// The empty project has no @types/node: the package itself must not need it.
declare const process: { env: Record<string, string | undefined> };

// No organization: the client learns it from the key (GET /v1/account).
const client = createPlatformClient({ baseUrl: process.env.BASE_URL!, credential: process.env.API_KEY! });
const org: Schemas['OrgContextOut'] = await client.call('getOrgContext');
const billing = await client.call('setBillingBudget', { body: { spend_budget_cents: 9223372036854775807n } });
let notFound = '';
try {
  await client.call('getVm', { path: { vm_id: '00000000-0000-4000-8000-000000000000' } });
} catch (error) {
  if (error instanceof ProblemError) notFound = error.code;
}
console.log(JSON.stringify({ name: org.name, budget: String(billing.spend_budget_cents), notFound }));
`;

describe('the client package', () => {
  test('packs with its built JavaScript and declarations only', async () => {
    const packed = await run('npm', ['pack', '--pack-destination', packDir, '--json'], { cwd: path.join(repoRoot, 'client') });
    expect(packed.code, packed.stderr).toBe(0);
    const [report] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ files: Array<{ path: string }> }>;
    const files = report!.files.map((file) => file.path);
    expect(files).toContain('dist/client/index.js');
    expect(files).toContain('dist/client/index.d.ts');
    expect(files).toContain('dist/generated/operations.js');
    // The CLI, built, with the contract it reads its commands from, and the package's README.
    expect(files).toContain('dist/client/cli/run.js');
    expect(files).toContain('dist/generated/openapi.json');
    expect(files).toContain('README.md');
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
  }, 120_000);

  test('installs into an empty project, compiles there with tsc, and talks to the server', async () => {
    const tarball = readdirSync(packDir).find((name) => name.endsWith('.tgz'));
    expect(tarball).toBeDefined();
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'client-user', private: true, type: 'module' }));
    // Its dependencies come from the npm cache that installing this repository filled.
    const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(packDir, tarball!)], {
      cwd: project,
    });
    expect(installed.code, installed.stderr).toBe(0);
    writeFileSync(path.join(project, 'snippet.ts'), SNIPPET);
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          lib: ['ES2023', 'DOM'],
          types: [],
          outDir: 'out',
          skipLibCheck: false,
        },
        files: ['snippet.ts'],
      }),
    );
    const compiled = await run(bin('tsc'), ['-p', 'tsconfig.json'], { cwd: project });
    expect(compiled.code, compiled.stdout + compiled.stderr).toBe(0);
    const ran = await run(process.execPath, ['out/snippet.js'], {
      cwd: project,
      env: { BASE_URL: server.url, ORG_ID: server.org.orgId, API_KEY: server.org.ownerKey },
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout.trim())).toEqual({ name: 'Acme Robotics', budget: '9223372036854775807', notFound: 'not_found' });
  }, 180_000);

  test('`npm install -g` of the tarball gives `cloud`, which runs from an empty folder: help, and real calls by a key alone', async () => {
    const tarball = readdirSync(packDir).find((name) => name.endsWith('.tgz'))!;
    const installed = await run(
      'npm',
      ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', path.join(packDir, tarball)],
      {
        cwd: prefix,
      },
    );
    expect(installed.code, installed.stderr).toBe(0);
    const cloud = path.join(prefix, 'bin', 'cloud');
    expect(statSync(cloud).mode & 0o111).not.toBe(0);
    const empty = mkdtempSync(path.join(tmpdir(), 'cloud-empty-'));
    // Only PATH (for node) and HOME: nothing of this repository.
    const env = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: empty };
    const spawnCloud = (args: string[], extra: Record<string, string> = {}) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
        const child = spawn(cloud, args, { cwd: empty, env: { ...env, ...extra } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr }));
        child.stdin.end();
      });
    const help = await spawnCloud(['--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^cloud <group> <command>/);
    expect((await spawnCloud(['vm', 'create', '--help'])).stdout).toMatch(/--memory-mb <integer 512\.\.262144> {2}required/);
    const account = await spawnCloud(['account', 'get', '-o', 'json'], { CLOUD_BASE_URL: server.url, CLOUD_API_KEY: server.org.ownerKey });
    expect(account.code, account.stderr).toBe(0);
    expect(JSON.parse(account.stdout)).toMatchObject({ org_id: server.org.orgId, org_name: 'Acme Robotics' });
    const regions = await spawnCloud(['region', 'list'], { CLOUD_BASE_URL: server.url, CLOUD_API_KEY: server.org.ownerKey });
    expect(regions.code, regions.stderr).toBe(0);
    expect(regions.stdout).toMatch(/^fra1\s+Frankfurt 1\s/m);
    rmSync(empty, { recursive: true, force: true });
  }, 180_000);
});
