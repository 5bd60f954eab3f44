// `npm start` and `npm run admin`: runs a TypeScript entry point of the server as Node runs it in
// production. Node 22.18+ and 24 strip the types themselves (the sources use erasable syntax only,
// `erasableSyntaxOnly` in tsconfig.json): no compiler, no loader. An older Node is refused with a
// line that says which to use (package.json's engines).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const entry = process.argv[2];
if (!entry) {
  console.error('usage: node scripts/start.mjs <entry.ts> [arguments]');
  process.exit(2);
}
if (!process.features.typescript) {
  console.error(
    `cloud-platform: Node ${process.versions.node} cannot run TypeScript itself; use Node 22.18+ or 24 (npm install brings 24).`,
  );
  process.exit(1);
}
// The entry point sees its own arguments, as if it had been started directly.
process.argv.splice(1, 2, path.resolve(entry));
await import(pathToFileURL(path.resolve(entry)).href);
