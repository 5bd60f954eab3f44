#!/usr/bin/env node
// The `cloud` command inside this repository (`npm run cli --`). Node 22.18+ and 24 run the
// TypeScript sources themselves; Node 20 through tsx. The client package carries the CLI built to
// JavaScript instead (`dist/client/cli/run.js`, its `bin`), which starts faster. See main.ts for
// the commands and exit codes.

const entry = new URL('./run.ts', import.meta.url).href;
if (process.features.typescript) await import(entry);
else await (await import('tsx/esm/api')).tsImport(entry, import.meta.url);
