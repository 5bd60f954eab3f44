// `cloud`: the command-line client of the Cloud Platform API, on the typed client. Commands come
// from the contract (commands.ts); see `cloud help`. Exit codes (for scripts):
//   0 done; 1 usage error; 2 the API refused (4xx problem); 3 server error, unreachable or
//   timed out (5xx, network); 4 the operation failed; 5 the operation was cancelled;
//   6 --wait gave up before the operation finished.
import { readFileSync } from 'node:fs';
import { createPlatformClient, type PlatformClient } from '../client.ts';
import { OperationFailedError, OperationTimeoutError, PlatformNetworkError, ProblemError } from '../errors.ts';
import { parseJson } from '../json.ts';
import type { Operation } from '../types.ts';
import { commands, findCommand, type Command, type Parameter } from './commands.ts';
import { completionScript } from './completion.ts';
import { render, renderProblem, type OutputFormat } from './output.ts';
import { ProfileError, resolveProfile } from './profile.ts';

export const EXIT = { ok: 0, usage: 1, refused: 2, unavailable: 3, failed: 4, cancelled: 5, waitTimeout: 6 } as const;

class UsageError extends Error {}

interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  stdin: () => string;
  isTty: boolean;
}

const GLOBAL_FLAGS = new Set(['base-url', 'api-key', 'org', 'profile', 'output', 'wait', 'timeout', 'body', 'help']);

/** Splits `--name value`, `--name=value` and bare `--flag` (a boolean) from positionals. */
function parseArguments(argv: string[]): { positionals: string[]; flags: Map<string, string[]> } {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (!argument.startsWith('--')) {
      positionals.push(argument);
      continue;
    }
    const [name, inline] = argument.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const next = argv[index + 1];
    const value = inline ?? (name === 'wait' || name === 'help' || next === undefined || next.startsWith('--') ? 'true' : (index++, next));
    flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  return { positionals, flags };
}

/** A flag's value as the contract's type: JSON where it parses as JSON (numbers exact), else the text. */
function valueOf(parameter: Parameter, raw: string[]): unknown {
  const one = (text: string): unknown => {
    if (parameter.type === 'string') return text;
    try {
      return parseJson(text);
    } catch {
      return text;
    }
  };
  if (parameter.type === 'array') return raw.flatMap((text) => [one(text)].flat());
  return one(raw[raw.length - 1]!);
}

function requestOf(command: Command, positionals: string[], flags: Map<string, string[]>, io: Io) {
  if (positionals.length !== command.positionals.length) {
    throw new UsageError(
      `${command.group} ${command.verb} takes ${command.positionals.map((name) => `<${name}>`).join(' ') || 'no arguments'}`,
    );
  }
  const path = Object.fromEntries(command.positionals.map((name, index) => [name, positionals[index]!]));
  const query: Record<string, unknown> = {};
  for (const parameter of command.query) {
    const raw = flags.get(parameter.flag);
    if (raw) query[parameter.name] = valueOf(parameter, raw);
    else if (parameter.required) throw new UsageError(`--${parameter.flag} is required`);
  }
  let body: Record<string, unknown> | undefined;
  const whole = flags.get('body')?.at(-1);
  if (whole !== undefined) {
    const text = whole === '-' ? io.stdin() : whole.startsWith('@') ? readFileSync(whole.slice(1), 'utf8') : whole;
    body = parseJson(text) as Record<string, unknown>;
  }
  for (const field of command.body?.fields ?? []) {
    const raw = flags.get(field.flag);
    if (raw) (body ??= {})[field.name] = valueOf(field, raw);
  }
  if (command.body?.required && body === undefined) body = {};
  const known = new Set([
    ...GLOBAL_FLAGS,
    ...command.query.map((parameter) => parameter.flag),
    ...(command.body?.fields ?? []).map((field) => field.flag),
  ]);
  const unknown = [...flags.keys()].filter((name) => !known.has(name));
  if (unknown.length > 0)
    throw new UsageError(
      `unknown option${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `--${name}`).join(', ')} for ${command.group} ${command.verb}`,
    );
  return { path, query, ...(body !== undefined && { body }) };
}

/** The operation a response carries: `{operation}` of a 202, or the operation itself (cancel). */
function operationOf(body: unknown): Operation | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const candidate = (body as { operation?: Operation }).operation ?? body;
  return typeof (candidate as Operation).id === 'string' && typeof (candidate as Operation).state === 'string' && 'attempt' in candidate
    ? (candidate as Operation)
    : undefined;
}

async function waitFor(client: PlatformClient, operation: Operation, timeoutSeconds: number, io: Io): Promise<Operation> {
  const started = Date.now();
  let lastLine = '';
  const progress = (current: Operation) => {
    const line = `operation ${current.id} (${current.type}): ${current.state}, attempt ${current.attempt}, ${Math.round((Date.now() - started) / 1000)}s`;
    if (io.isTty) io.stderr(`\r\u001b[2K${line}`);
    else if (line.replace(/, \d+s$/, '') !== lastLine.replace(/, \d+s$/, '')) io.stderr(`${line}\n`);
    lastLine = line;
  };
  progress(operation);
  try {
    const finished = await client.waitForOperation(operation, {
      timeoutMs: timeoutSeconds * 1000,
      onProgress: progress,
      initialIntervalMs: 250,
      maxIntervalMs: 2000,
    });
    progress(finished);
    return finished;
  } finally {
    if (io.isTty) io.stderr('\n');
  }
}

export function usage(): string {
  const groups = new Map<string, Command[]>();
  for (const command of commands()) groups.set(command.group, [...(groups.get(command.group) ?? []), command]);
  const lines = [
    'cloud <group> <verb> [arguments] [--flags]',
    '',
    'Options: --output table|json, --wait (follow the operation to its end), --timeout SECONDS (default 600),',
    '  --body JSON|@file|- (the whole request body), --profile NAME, --base-url URL, --api-key KEY, --org UUID.',
    'Profile: flags, then CLOUD_BASE_URL / CLOUD_API_KEY / CLOUD_ORG, then CLOUD_CONFIG (or',
    '  ~/.config/cloud-platform/config.json), then ./data/bootstrap.json.',
    'Exit codes: 0 done, 1 usage, 2 refused (4xx), 3 server or network, 4 operation failed, 5 cancelled, 6 --wait timed out.',
    '`cloud completion bash|zsh` prints a completion script.',
    '',
  ];
  for (const [group, list] of groups) {
    lines.push(group);
    for (const command of list) {
      const args = command.positionals.map((name) => `<${name}>`).join(' ');
      lines.push(`  ${`${command.verb} ${args}`.trimEnd().padEnd(40)} ${command.summary}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Runs one command line; resolves with the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  const { positionals, flags } = parseArguments(argv);
  const [group, verb, ...rest] = positionals;
  if (!group || group === 'help' || flags.has('help')) {
    io.stdout(usage());
    return group || flags.has('help') ? EXIT.ok : EXIT.usage;
  }
  if (group === 'completion') {
    const shell = verb ?? 'bash';
    if (shell !== 'bash' && shell !== 'zsh') {
      io.stderr('cloud completion bash|zsh\n');
      return EXIT.usage;
    }
    io.stdout(completionScript(shell));
    return EXIT.ok;
  }
  const command = verb === undefined ? undefined : findCommand(group, verb);
  if (!command) {
    io.stderr(`cloud: no command "${[group, verb].filter(Boolean).join(' ')}"; see \`cloud help\`.\n`);
    return EXIT.usage;
  }
  const format = (flags.get('output')?.at(-1) ?? 'table') as OutputFormat;
  try {
    if (format !== 'table' && format !== 'json') throw new UsageError('--output is table or json');
    const request = requestOf(command, rest, flags, io);
    const profile = resolveProfile(
      {
        baseUrl: flags.get('base-url')?.at(-1),
        apiKey: flags.get('api-key')?.at(-1),
        org: flags.get('org')?.at(-1),
        profile: flags.get('profile')?.at(-1),
      },
      io.env,
    );
    const client = createPlatformClient({ baseUrl: profile.baseUrl, org: profile.org, credential: profile.apiKey });
    // The command table is read at run time: the call is typed by the contract, not by this code.
    const untyped = client as unknown as { call(operationId: string, init: unknown): Promise<unknown> };
    const body = await untyped.call(command.operationId, request);
    const operation = operationOf(body);
    if (flags.has('wait') && operation) {
      const timeout = Number(flags.get('timeout')?.at(-1) ?? 600);
      if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError('--timeout is a number of seconds');
      const finished = await waitFor(client, operation, timeout, io);
      const final = (body as { operation?: Operation }).operation ? { ...(body as object), operation: finished } : finished;
      io.stdout(render(final, format));
      return EXIT.ok;
    }
    io.stdout(render(body, format));
    return EXIT.ok;
  } catch (error) {
    return reportError(error, format, io);
  }
}

function reportError(error: unknown, format: OutputFormat, io: Io): number {
  if (error instanceof UsageError || error instanceof ProfileError) {
    io.stderr(`cloud: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof ProblemError) {
    io.stderr(format === 'json' ? render(error.problem, 'json') : renderProblem(error));
    return error.status >= 500 ? EXIT.unavailable : EXIT.refused;
  }
  if (error instanceof OperationFailedError) {
    io.stderr(
      format === 'json'
        ? render(error.operation, 'json')
        : `Operation ${error.operation.id} ${error.operation.state}: ${error.operation.error_detail ?? 'no detail'}\n`,
    );
    return error.operation.state === 'cancelled' ? EXIT.cancelled : EXIT.failed;
  }
  if (error instanceof OperationTimeoutError) {
    io.stderr(`cloud: ${error.message}\n`);
    return EXIT.waitTimeout;
  }
  if (error instanceof PlatformNetworkError) {
    io.stderr(`cloud: ${error.message}\n`);
    return EXIT.unavailable;
  }
  throw error;
}
