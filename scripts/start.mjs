// `npm start` and `npm run admin`: runs a TypeScript entry point of the server as Node runs it in
// production. Node 22.18+ and 24 strip the types themselves (the sources use erasable syntax only,
// `erasableSyntaxOnly` in tsconfig.json): no compiler, no loader. Node 20, past its end of life,
// cannot; there the entry point runs through tsx, and a line says so.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const entry = process.argv[2];
if (!entry) {
  console.error('usage: node scripts/start.mjs <entry.ts> [arguments]');
  process.exit(2);
}
// The entry point sees its own arguments, as if it had been started directly.
process.argv.splice(1, 2, path.resolve(entry));

if (process.features.typescript) {
  await import(pathToFileURL(path.resolve(entry)).href);
} else {
  console.error(
    `cloud-platform: Node ${process.versions.node} cannot run TypeScript itself; running through tsx (use Node 22.18+ or 24 in production).`,
  );
  const { tsImport } = await import('tsx/esm/api');
  await tsImport(pathToFileURL(path.resolve(entry)).href, import.meta.url);
}
