// Runs the CLI on this process's arguments and streams, and exits with its code.
import { readFileSync } from 'node:fs';
import { runCli } from './main.ts';

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stdin: () => readFileSync(0, 'utf8'),
  isTty: process.stderr.isTTY === true,
});
process.exitCode = code;
