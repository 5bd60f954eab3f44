#!/usr/bin/env node
// The `cloud` command inside this repository (`npm run cli --`). Node 22.18+ and 24 run the
// TypeScript sources themselves; an older Node is refused with a line that says so. The client
// package carries the CLI built to JavaScript instead (`dist/client/cli/run.js`, its `bin`), which
// starts faster. See main.ts for the commands and exit codes.

if (!process.features.typescript) {
  console.error(`cloud: Node ${process.versions.node} cannot run TypeScript itself; use Node 22.18+ or 24.`);
  process.exit(1);
}
await import(new URL('./run.ts', import.meta.url).href);
