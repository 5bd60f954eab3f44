#!/usr/bin/env node
// The `cloud` command inside this repository (`npm run cli --`). Node 22.18+ and 24 run the
// TypeScript sources themselves; an older Node is refused with a line that says so. The client
// package carries the CLI built to JavaScript instead (`dist/client/cli/run.js`, its `bin`), which
// starts faster. See main.ts for the commands and exit codes.

import module from 'node:module';

if (!process.features.typescript) {
  console.error(`cloud: Node ${process.versions.node} cannot run TypeScript itself; use Node 22.18+ or 24.`);
  process.exit(1);
}
// Node's compile cache, as `npm start` uses it (scripts/start.mjs): the modules' stripped types and
// V8's compiled code are kept on disk, keyed by each file's content, and reused by the next run.
// Stripping the types of the CLI's modules again at every command was half of its start: 0.39 to
// 0.44 s to print its help, 0.18 to 0.22 s with the cache. Where the directory cannot be written,
// Node runs without it.
module.enableCompileCache?.();
await import(new URL('./run.ts', import.meta.url).href);
