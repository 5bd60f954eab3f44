// The code samples of the docs work as printed: every curl sample answers 2xx from the mock (with
// BASE_URL and API_KEY set, as the docs say), and every TypeScript sample type-checks against the
// typed client, so a sample cannot drift from the contract or the client.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CLIENT_IMPORT, curlSample, sampleOperations, typeScriptSample } from '../../scripts/lib/code-samples.ts';
import { bin, repoRoot, run } from '../../scripts/lib/run.ts';
import { loadBundle } from '../support/contract.ts';
import { startMock, type Started } from '../support/processes.ts';

const operations = sampleOperations(loadBundle());

let mock: Started;
let baseUrl: string;

beforeAll(async () => {
  ({ mock, baseUrl } = await startMock());
});

afterAll(() => mock?.stop());

describe('the curl samples', () => {
  test(`all ${operations.length} answer 2xx from the mock`, async () => {
    const failures: string[] = [];
    for (const operation of operations) {
      // The sample as printed, with curl told to print the status (and nothing else) at the end.
      const script = `${curlSample(operation)} -o /dev/null -w '%{http_code}'`;
      const result = await run('bash', ['-c', script], { env: { BASE_URL: baseUrl, API_KEY: 'cpk_any_key_works_with_the_mock' } });
      if (result.code !== 0 || !/^2\d\d$/.test(result.stdout.trim()))
        failures.push(`${operation.operationId}: exit ${result.code}, status ${result.stdout} ${result.stderr}`);
    }
    expect(failures).toEqual([]);
  }, 180_000);
});

describe('the TypeScript samples', () => {
  test(`all ${operations.length} type-check against the client`, async () => {
    const dir = path.join(repoRoot, '.tmp', `samples-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      for (const operation of operations) {
        const source = typeScriptSample(operation);
        expect(source.startsWith(CLIENT_IMPORT)).toBe(true);
        // The package name resolves to the client in this repository.
        writeFileSync(path.join(dir, `${operation.operationId}.ts`), source.replace("'@cloud-platform/client'", "'../../client/index.ts'"));
      }
      writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.json', include: ['*.ts'] }));
      const result = await run(bin('tsc'), ['-p', path.join(dir, 'tsconfig.json'), '--noEmit']);
      expect(result.stdout + result.stderr).toBe('');
      expect(result.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
