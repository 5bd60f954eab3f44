// Writes generated/openapi.json: the contract bundled into one document, integers exact.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleSpec, bundlePath } from './lib/bundle.ts';

const text = await bundleSpec();
mkdirSync(path.dirname(bundlePath), { recursive: true });
writeFileSync(bundlePath, text);
console.log(`wrote ${path.relative(process.cwd(), bundlePath)}`);
