// Writes site/index.html (or `--output FILE`): the Redoc reference of the contract as one
// self-contained page (`--inlineBundle`: scripts embedded, nothing fetched from a CDN when it is
// opened), with code samples, local servers and the error codes added (lib/docs-document.ts).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { docsDocument } from './lib/docs-document.ts';
import { bin, repoRoot, run } from './lib/run.ts';

const { values } = parseArgs({ options: { output: { type: 'string', default: path.join(repoRoot, 'site', 'index.html') } } });
const output = path.resolve(values.output);
const workDir = mkdtempSync(path.join(tmpdir(), 'docs-'));
try {
  const document = path.join(workDir, 'openapi.json');
  writeFileSync(document, docsDocument());
  mkdirSync(path.dirname(output), { recursive: true });
  const result = await run(bin('redocly'), [
    'build-docs',
    document,
    '--inlineBundle',
    '--output',
    output,
    '--title',
    'Cloud Platform API reference',
  ]);
  if (result.code !== 0) throw new Error(`redocly build-docs failed:\n${result.stdout}\n${result.stderr}`);
  writeFileSync(output, withoutCdnImages(readFileSync(output, 'utf8')));
  console.log(`wrote ${path.relative(process.cwd(), output)}`);
} finally {
  rmSync(workDir, { recursive: true, force: true });
}

/**
 * Even with `--inlineBundle`, Redoc's "API docs by Redocly" attribution loads its logo from
 * cdn.redoc.ly when the page opens. The logo is replaced by an inline image of the same text, so
 * that opening the page fetches nothing (readers behind proxies or offline see the same page).
 */
function withoutCdnImages(html: string): string {
  const inlineLogo = `data:image/svg+xml,${encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="80" height="16"><text x="0" y="12" font-family="sans-serif" font-size="12">Redocly</text></svg>',
  )}`;
  return html.replace(/https:\/\/cdn\.redoc\.ly\/redoc\/[\w.-]+\.svg/g, inlineLogo);
}
