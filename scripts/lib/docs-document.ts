import { readFileSync } from 'node:fs';
import { parse, stringify } from 'lossless-json';
import { bundlePath } from './bundle.ts';
import { codeSamples, sampleOperations } from './code-samples.ts';
import { errorCodes, errorCodesMarkdown } from './error-codes.ts';
import { examplesByOperation, examplesLine, splitBySuccess } from './examples-index.ts';
import { arrayOf, objectOf, type Json } from './openapi-json.ts';
import { wideBounds } from './wide-bounds.ts';

/** Where the API can be reached besides production: what a developer starts on this machine. */
export const LOCAL_SERVERS = [
  { url: 'http://127.0.0.1:8080', description: 'Local: `npm start` with the default HOST and PORT (`base_url` in `data/bootstrap.json`).' },
  {
    url: 'http://127.0.0.1:4010',
    description: 'Local mock: `npm run mock` (any Bearer credential opens any organization; `Prefer: example=<name>` chooses the answer).',
  },
];

/**
 * The document the docs page renders: the bundle, with what a reader needs beside the contract,
 * all derived from it so that nothing can drift:
 *
 * - `servers` adds the local server and the mock after production;
 * - every operation gets `x-codeSamples` (curl and the typed client, lib/code-samples.ts) and the
 *   list of its named examples, as the mock serves them with `Prefer: example=<name>`;
 * - the introduction gets a section on the samples and a page of every error code (lib/error-codes.ts).
 *
 * One adaptation: the page parses the document with JavaScript numbers, so it would print the
 * spend budget's maximum, 9223372036854775807, as 9223372036854776000. A bound beyond ±2^53-1 is
 * therefore left out of the rendered constraints; the schema's description states it exactly.
 */
export function docsDocument(): string {
  const text = readFileSync(bundlePath, 'utf8');
  const document = parse(text) as Json;
  const plain = JSON.parse(text) as Json;
  dropWideBounds(document);

  document.servers = [...arrayOf(document.servers).map((server) => ({ ...objectOf(server), description: 'Production' })), ...LOCAL_SERVERS];
  const samples = new Map(sampleOperations(plain).map((operation) => [operation.operationId, codeSamples(operation)]));
  const examples = new Map(examplesByOperation(plain).map(({ operationId, examples }) => [operationId, examples]));
  for (const item of Object.values(objectOf(document.paths))) {
    for (const operation of Object.values(objectOf(item)).map(objectOf)) {
      if (typeof operation.operationId !== 'string') continue;
      operation['x-codeSamples'] = samples.get(operation.operationId);
      const [success, errors] = splitBySuccess(examples.get(operation.operationId) ?? []);
      operation.description = [
        typeof operation.description === 'string' ? operation.description : '',
        `**Named examples** (the mock serves one with \`Prefer: example=<name>\`; status in brackets): ${examplesLine(success)}; errors: ${examplesLine(errors)}.`,
      ].join('\n\n');
    }
  }
  const info = objectOf(document.info);
  info.description = `${String(info.description)}\n${SAMPLES_SECTION}\n${errorCodesMarkdown(errorCodes(plain))}\n`;
  return `${stringify(document, undefined, 2)}\n`;
}

const SAMPLES_SECTION = `
## Code samples

Every operation shows a \`curl\` sample and a TypeScript sample of the typed client
(\`@cloud-platform/client\`, in \`client/\` of the repository). Both are made from the contract's
own examples, and both read two environment variables:

- \`BASE_URL\`: \`https://api.cloudplatform.dev\`, the local server (\`http://127.0.0.1:8080\`, or
  \`base_url\` of \`data/bootstrap.json\`) or the mock (\`http://127.0.0.1:4010\`);
- \`API_KEY\`: an API key (\`api_key\` of \`data/bootstrap.json\` locally; any value for the mock).

The ids in the samples are those of the examples (organization \`3f6c1a2e-9b4d-4c7a-8e21-5d0b7f9a1c34\`),
which the mock answers to: replace them with your own against a real server. The mock serves any
named example an operation lists with the header \`Prefer: example=<name>\`.
`;

function dropWideBounds(document: unknown): void {
  for (const { schema, bound, value, stated } of wideBounds(document)) {
    if (!stated) throw new Error(`a schema with ${bound} ${value} must state it in its description, which the docs show instead`);
    delete schema[bound];
  }
}
