// Serves the contract with the Prism mock: examples as responses, `Prefer: code=…` and
// `Prefer: example=…` to choose them, and request validation. Usage:
//   npm run mock [-- --port 4010 --host 127.0.0.1]
// Prism itself listens on --prism-port (default: the next port); a thin proxy on --port answers invalid requests with the
// server's own problem documents and serves any named example by `Prefer` (see mock-proxy.ts).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { mockDocument } from './lib/mock-document.ts';
import { startMockProxy } from './lib/mock-proxy.ts';
import { mockOperations } from './lib/mock-operations.ts';
import { bin, repoRoot } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.MOCK_PORT ?? '4010' },
    host: { type: 'string', default: process.env.MOCK_HOST ?? '127.0.0.1' },
    // Where Prism itself listens (default: the next port). Tests pass a port they found free.
    'prism-port': { type: 'string' },
  },
});
const port = Number(values.port);
const prismPort = values['prism-port'] ? Number(values['prism-port']) : port + 1;

const documentPath = path.join(repoRoot, '.tmp', `mock-openapi-${port}.json`);
mkdirSync(path.dirname(documentPath), { recursive: true });
const document = mockDocument();
writeFileSync(documentPath, document);
const operations = mockOperations(JSON.parse(document) as Record<string, unknown>);

const prism = spawn(bin('prism'), ['mock', documentPath, '--host', '127.0.0.1', '--port', String(prismPort)], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
prism.stdout.on('data', (chunk: Buffer) => {
  const text = chunk.toString();
  process.stdout.write(text.replaceAll(`127.0.0.1:${prismPort}`, `${values.host}:${port}`));
  if (text.includes('Prism is listening')) {
    startMockProxy({ host: values.host, port, prismPort, operations }).catch((error: unknown) => {
      console.error(`mock: cannot listen on ${values.host}:${port}: ${String(error)}`);
      prism.kill();
    });
  }
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => prism.kill(signal));
}
prism.on('exit', (code) => process.exit(code ?? 0));
