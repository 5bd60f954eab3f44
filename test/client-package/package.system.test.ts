// The client as another project gets it: packed with `npm pack` (which builds it), installed from
// the tarball into an empty project, compiled there with TypeScript, and run against a real server.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bin, repoRoot, run } from '../../scripts/lib/run.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let project: string;
let packDir: string;

beforeAll(async () => {
  server = await startTestServer();
  packDir = mkdtempSync(path.join(tmpdir(), 'client-pack-'));
  project = mkdtempSync(path.join(tmpdir(), 'client-user-'));
}, 120_000);

afterAll(async () => {
  await server?.close();
  for (const dir of [packDir, project]) if (dir) rmSync(dir, { recursive: true, force: true });
});

const SNIPPET = `import { createPlatformClient, ProblemError, type Schemas } from '@cloud-platform/client';

// The empty project has no @types/node: the package itself must not need it.
declare const process: { env: Record<string, string | undefined> };

const client = createPlatformClient({ baseUrl: process.env.BASE_URL!, org: process.env.ORG_ID!, credential: process.env.API_KEY! });
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
});
