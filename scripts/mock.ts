// Serves the contract with the Prism mock: examples as responses, `Prefer: code=…` and
// `Prefer: example=…` to choose them, and every request checked as the server checks it. Usage:
//   npm run mock [-- --port 4010 --host 127.0.0.1]
// The proxy on --port runs the server's own request stages and answers a refused request as the server does; it serves
// any named example by `Prefer` (see mock-proxy.ts). Prism itself listens behind it on 127.0.0.1, on --prism-port or
// else on a port the system hands it: a port probed free beforehand could be taken by another socket before Prism binds it.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundlePath } from './lib/bundle.ts';
import { mockDocument } from './lib/mock-document.ts';
import { startMockProxy } from './lib/mock-proxy.ts';
import { mockOperations, storyOperations } from './lib/mock-operations.ts';
import { bin, repoRoot } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.MOCK_PORT ?? '4010' },
    host: { type: 'string', default: process.env.MOCK_HOST ?? '127.0.0.1' },
    'prism-port': { type: 'string', default: '0' },
  },
});
const port = Number(values.port);

const documentPath = path.join(repoRoot, '.tmp', `mock-openapi-${process.pid}.json`);
mkdirSync(path.dirname(documentPath), { recursive: true });
writeFileSync(documentPath, mockDocument());
process.on('exit', () => rmSync(documentPath, { force: true }));
const contract = JSON.parse(readFileSync(bundlePath, 'utf8')) as Record<string, unknown>;
const operations = mockOperations(contract);
const story = storyOperations(contract);

const prism = spawn(bin('prism'), ['mock', documentPath, '--host', '127.0.0.1', '--port', values['prism-port']], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
let prismAddress: string | undefined;
let heldOutput = '';
prism.stdout.on('data', (chunk: Buffer) => {
  if (prismAddress === undefined) {
    // Prism lists its routes under its own address before it says it listens: held until the address is known.
    heldOutput += chunk.toString();
    const listening = /Prism is listening on http:\/\/(127\.0\.0\.1:(\d+))/.exec(heldOutput);
    if (!listening) return;
    const [, address = '', prismPort = ''] = listening;
    prismAddress = address;
    startMockProxy({ host: values.host, port, prismPort: Number(prismPort), operations, story }).catch((error: unknown) => {
      console.error(`mock: cannot listen on ${values.host}:${port}: ${String(error)}`);
      prism.kill();
    });
    process.stdout.write(publicAddresses(heldOutput, address));
    heldOutput = '';
  } else {
    process.stdout.write(publicAddresses(chunk.toString(), prismAddress));
  }
});
// Prism names its own address; users reach the mock through the proxy's.
function publicAddresses(text: string, address: string): string {
  return text.replaceAll(address, `${values.host}:${port}`);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => prism.kill(signal));
}
// However this process ends (an error, its output closed under it), Prism ends with it: left
// behind, it kept a port and its memory with no proxy in front and nothing to stop it.
process.on('exit', () => {
  if (prism.exitCode === null && prism.signalCode === null) prism.kill('SIGTERM');
});
prism.on('exit', (code) => {
  process.stdout.write(heldOutput);
  process.exit(code ?? 0);
});
