import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startProcess, type StartOptions, type Started } from './processes.ts';
import { bin, repoRoot } from './run.ts';

/** What `npm start` runs: the environment its command line sets, Node's flags, the script and its arguments. */
export interface StartCommand {
  env: Record<string, string>;
  nodeArgs: string[];
  args: string[];
}

/**
 * The command line of `npm start`, read from the `start` script of `root`'s package.json (a form
 * kept simple on purpose: `NAME=value … node [--flags] script [arguments]`). The benches start
 * the server from it, so that what they measure runs as `npm start` runs it, with the same
 * allocator settings and Node flags, and a change there cannot leave them measuring another thing.
 */
export function npmStartCommand(root = repoRoot): StartCommand {
  const words = scriptWords('start', root);
  const line = words.join(' ');
  const env: Record<string, string> = {};
  while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=\S*$/.test(words[0]!)) {
    const [name, value] = words.shift()!.split(/=(.*)/);
    env[name!] = value!;
  }
  if (words.shift() !== 'node')
    throw new Error(`package.json's start script does not have the form "NAME=value … node [flags] script": ${line}`);
  const script = words.findIndex((word) => !word.startsWith('-'));
  if (script < 0) throw new Error(`package.json's start script names no script: ${line}`);
  return { env, nodeArgs: words.slice(0, script), args: withAbsoluteFiles(words.slice(script), root) };
}

/**
 * Another npm script's command as package.json says it (`node scripts/x.ts`, or a tool of
 * node_modules/.bin), with `args` after it: what `npm run <name> -- args` runs, without npm. Its
 * script's path is made absolute, as npmStartCommand makes it.
 */
export function npmScriptCommand(name: string, args: string[] = []): [command: string, args: string[]] {
  const [command, ...rest] = scriptWords(name, repoRoot);
  if (command === undefined) throw new Error(`package.json has no script "${name}"`);
  // npm puts node_modules/.bin first on a script's PATH: its node is the one running this process.
  return [command === 'node' ? process.execPath : bin(command), [...withAbsoluteFiles(rest, repoRoot), ...args]];
}

/** The words of package.json's script `name` in `root` (none when there is no such script). */
function scriptWords(name: string, root: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  return (manifest.scripts?.[name] ?? '').split(/\s+/).filter(Boolean);
}

/** A script's words, the files among them (`scripts/x.ts`) made absolute under `root`. */
function withAbsoluteFiles(words: string[], root: string): string[] {
  return words.map((word) => (/\.(ts|mjs|js)$/.test(word) ? path.join(root, word) : word));
}

/**
 * The server started as `npm start` starts it: package.json's command line (its environment, Node
 * and Node's flags; no npm or tsx wrapper between, which could kill it before its graceful stop),
 * from `root`, with `env` on top, in a process group of its own. The tests, the benches and the
 * fuzzer start it here, so that none of them runs a server other than the one users run.
 */
export function startAsNpmStart(env: Record<string, string>, options: StartOptions & { root?: string; nodeArgs?: string[] } = {}): Started {
  const { root = repoRoot, nodeArgs = [], ...startOptions } = options;
  const start = npmStartCommand(root);
  return startProcess(
    process.execPath,
    [...start.nodeArgs, ...nodeArgs, ...start.args],
    { ...start.env, ...env },
    { cwd: root, ...startOptions },
  );
}

/**
 * Extra Node flags for a server a bench starts, from the environment variable `variable` (words
 * separated by spaces, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it).
 */
export function extraNodeArgs(variable: string): string[] {
  return (process.env[variable] ?? '').split(' ').filter(Boolean);
}
