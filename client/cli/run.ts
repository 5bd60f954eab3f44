#!/usr/bin/env node
// Runs the CLI on this process's arguments and streams, and exits with its code.
import { readFileSync } from 'node:fs';
import type { Io } from './io.ts';
import { runCli } from './main.ts';

/** One line of standard input after a question on stderr; without echo for a secret typed at a terminal. */
async function ask(question: string, options: { secret?: boolean } = {}): Promise<string | undefined> {
  const { createInterface } = await import('node:readline');
  process.stderr.write(question);
  const input = process.stdin;
  const secret = options.secret === true && input.isTTY === true;
  const lines = createInterface({ input, terminal: false });
  if (secret) input.setRawMode(true);
  try {
    if (!secret) {
      for await (const line of lines) return line;
      return undefined;
    }
    // Raw mode: read keys until Enter, echoing nothing.
    lines.close();
    return await new Promise<string | undefined>((resolve) => {
      let typed = '';
      const onData = (chunk: Buffer) => {
        for (const character of chunk.toString('utf8')) {
          if (character === '\r' || character === '\n') return done(typed);
          if (character === '\u0003' || character === '\u0004') return done(undefined);
          if (character === '\u007f') typed = typed.slice(0, -1);
          else typed += character;
        }
      };
      const done = (value: string | undefined) => {
        input.removeListener('data', onData);
        process.stderr.write('\n');
        resolve(value);
      };
      input.on('data', onData);
      input.resume();
    });
  } finally {
    if (secret) input.setRawMode(false);
    lines.close();
    input.pause();
  }
}

const io: Io = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stdin: () => readFileSync(0, 'utf8'),
  ask,
  isTty: process.stderr.isTTY === true,
};
process.exitCode = await runCli(process.argv.slice(2), io);
