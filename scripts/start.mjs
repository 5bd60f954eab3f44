// `npm start` and `npm run admin`: runs a TypeScript entry point of the server as Node runs it in
// production. Node 22.18+ and 24 strip the types themselves (the sources use erasable syntax only,
// `erasableSyntaxOnly` in tsconfig.json): no compiler, no loader. An older Node is refused with a
// line that says which to use (package.json's engines).
import module from 'node:module';
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
// Node's compile cache: the modules' stripped types and V8's compiled code are kept on disk
// (NODE_COMPILE_CACHE, or node-compile-cache in the OS's temporary directory), keyed by each
// file's content, and a later start reuses them. Loading the server's modules took half as much
// CPU with it (about a second without, on a busy 2-core machine): most of a restart's time.
// Where the directory cannot be written, Node runs without it.
const compileCache = module.enableCompileCache?.();
// Enabled here, it is this thread's only: a worker thread (the S3 endpoint's) stripped the types of
// its hundreds of modules again at every start, a third of its start-up CPU. Threads read
// NODE_COMPILE_CACHE as they start, as this one would have.
if (compileCache?.directory && process.env.NODE_COMPILE_CACHE === undefined) process.env.NODE_COMPILE_CACHE = compileCache.directory;
// The entry point sees its own arguments, as if it had been started directly.
process.argv.splice(1, 2, path.resolve(entry));
await import(pathToFileURL(path.resolve(entry)).href);
// The entry point has started (main.ts resolves once it listens): what it loaded is written now,
// rather than at exit, which a killed process never reaches.
module.flushCompileCache?.();
