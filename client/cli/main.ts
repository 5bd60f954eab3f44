// `cloud`: the command-line client of the Cloud Platform API, on the typed client. Commands come
// from the contract (commands.ts); see `cloud help`. Exit codes (for scripts):
//   0 done; 1 usage error (or a deletion not confirmed, or an ambiguous name); 2 the API refused
//   (4xx problem, or no resource of that name); 3 server error, unreachable or timed out (5xx,
//   network); 4 the operation failed; 5 the operation was cancelled; 6 --wait gave up before the
//   operation finished.
// Modules are imported when a command needs them, so that `cloud --help` or a completion starts fast.
import { readFileSync } from 'node:fs';
import type { PlatformClient } from '../client.ts';
import { OperationFailedError, OperationTimeoutError, PlatformNetworkError, ProblemError } from '../errors.ts';
import { parseJson } from '../json.ts';
import type { Operation } from '../types.ts';
import { GLOBAL_FLAGS, isTrue, last, parseArguments, UsageError, type ParsedArguments } from './args.ts';
import { commands, findCommand, groups, type Command, type Flag } from './commands.ts';
import { resolveTarget, type Target } from './contexts.ts';
import { commandHelp, EXTRA_COMMANDS, groupHelp, usage } from './help.ts';
import { LOOKUPS, NameError, resolveId } from './names.ts';
import { isOperation, outputOf, render, renderOptions, renderProblem, type OutputFormat } from './output.ts';
import { didYouMean } from './suggest.ts';
import { EXIT, type Io, type UntypedClient } from './io.ts';

export { EXIT, type Io };

/** Every word that names a group: the contract's groups and the hand-written ones. */
const allGroups = () => [...new Set([...groups(), ...EXTRA_COMMANDS.map((extra) => extra.group)])];
const verbsOf = (group: string) => [
  ...commands()
    .filter((command) => command.group === group)
    .map((command) => command.verb),
  ...EXTRA_COMMANDS.filter((extra) => extra.group === group).map((extra) => extra.verb),
];

/** `vms` is `vm`, `buckets` is `bucket`. */
function canonicalGroup(word: string): string {
  const known = allGroups();
  if (known.includes(word)) return word;
  const singular = word.replace(/e?s$/, '');
  return known.find((group) => group === singular || group === word.replace(/s$/, '')) ?? word;
}

/** Whether a flag takes a value, once the command is known from the first two words. */
function valueFlagFor(name: string, positionals: string[]): boolean | 'optional' {
  const global = GLOBAL_FLAGS[name as keyof typeof GLOBAL_FLAGS] as { value?: string } | undefined;
  if (global) return global.value !== undefined;
  const command = positionals.length >= 2 ? findCommand(canonicalGroup(positionals[0]!), positionals[1]!) : undefined;
  const flag = command?.flags.find((candidate) => candidate.flag === name);
  if (flag) return flag.kind === 'boolean' ? 'optional' : true;
  if (positionals[0] === 'context' && name === 'use') return false;
  return true;
}

export function parse(argv: string[]): ParsedArguments {
  return parseArguments(argv, valueFlagFor);
}

/** A flag's text as the contract's type: exact numbers, booleans, lists, key=value maps or JSON. */
function valueOf(flag: Flag, raw: string[]): unknown {
  const json = (text: string) => {
    try {
      return parseJson(text);
    } catch (error) {
      throw new UsageError(`--${flag.flag} takes ${flag.type}: ${(error as Error).message}`);
    }
  };
  const one = (text: string): unknown => {
    if (flag.nullable && text === 'null') return null;
    switch (flag.kind) {
      case 'integer':
        if (!/^-?\d+$/.test(text)) throw new UsageError(`--${flag.flag} takes an ${flag.type}; got "${text}"`);
        return parseJson(text);
      case 'number':
        if (!Number.isFinite(Number(text))) throw new UsageError(`--${flag.flag} takes a ${flag.type}; got "${text}"`);
        return parseJson(text);
      case 'boolean':
        if (text !== 'true' && text !== 'false') throw new UsageError(`--${flag.flag} takes true or false; got "${text}"`);
        return text === 'true';
      case 'string':
        if (flag.enum && !flag.enum.includes(text))
          throw new UsageError(`--${flag.flag} is one of ${flag.enum.join(', ')}; got "${text}"${didYouMean(text, flag.enum)}`);
        return text;
      default:
        return json(text);
    }
  };
  if (flag.kind === 'list') {
    return raw.flatMap((text) => (text.trim().startsWith('[') ? (json(text) as unknown[]) : text.split(',').filter(Boolean)));
  }
  if (flag.kind === 'map') {
    const entries: Array<[string, string]> = [];
    for (const text of raw) {
      if (text.trim().startsWith('{')) entries.push(...(Object.entries(json(text) as object) as Array<[string, string]>));
      else
        for (const pair of text.split(',').filter(Boolean)) {
          const at = pair.indexOf('=');
          if (at <= 0) throw new UsageError(`--${flag.flag} takes key=value pairs; got "${pair}"`);
          entries.push([pair.slice(0, at), pair.slice(at + 1)]);
        }
    }
    return Object.fromEntries(entries);
  }
  return one(raw.at(-1)!);
}

interface Request {
  path: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
}

/** The request of a command line, checked against the command's flags before anything is sent. */
function requestOf(command: Command, positionals: string[], flags: Map<string, string[]>, io: Io): Request {
  if (positionals.length !== command.positionals.length) {
    throw new UsageError(
      `${command.group} ${command.verb} takes ${command.positionals.map((positional) => `<${positional.name}>`).join(' ') || 'no arguments'}; see \`cloud ${command.group} ${command.verb} --help\``,
    );
  }
  const known = new Set([...Object.keys(GLOBAL_FLAGS), ...command.flags.map((flag) => flag.flag)]);
  for (const name of flags.keys()) {
    if (!known.has(name)) {
      throw new UsageError(
        `unknown flag --${name} for ${command.group} ${command.verb}${didYouMean(name, known, (candidate) => `--${candidate}`)}`,
      );
    }
  }
  const path = Object.fromEntries(command.positionals.map((positional, index) => [positional.name, positionals[index]!]));
  const query: Record<string, unknown> = {};
  let body: Record<string, unknown> | undefined;
  const whole = last(flags, 'body');
  if (whole !== undefined) {
    if (!command.body) throw new UsageError(`${command.group} ${command.verb} takes no body`);
    const text = whole === '-' ? io.stdin() : whole.startsWith('@') ? readFileSync(whole.slice(1), 'utf8') : whole;
    try {
      body = parseJson(text) as Record<string, unknown>;
    } catch (error) {
      throw new UsageError(`--body is not JSON: ${(error as Error).message}`);
    }
  }
  const missing: Flag[] = [];
  for (const flag of command.flags) {
    const raw = flags.get(flag.flag);
    if (raw) {
      const value = valueOf(flag, raw);
      if (flag.in === 'query') query[flag.name] = value;
      else (body ??= {})[flag.name] = value;
    } else if (flag.required && !(flag.in === 'body' && whole !== undefined)) missing.push(flag);
  }
  if (missing.length > 0) {
    throw new UsageError(
      `${command.group} ${command.verb} needs ${missing.map((flag) => `--${flag.flag} <${flag.type}>`).join(', ')}; see \`cloud ${command.group} ${command.verb} --help\``,
    );
  }
  if (command.body?.required && body === undefined) body = {};
  return { path, query, ...(body !== undefined && { body }) };
}

/** Ids for names: the positionals, and body fields that hold an id (`public-ip associate --vm-id web-1`). */
async function resolveNames(client: PlatformClient, request: Request): Promise<void> {
  for (const [name, value] of Object.entries(request.path)) request.path[name] = await resolveId(client, name, value);
  const body = request.body as Record<string, unknown> | undefined;
  if (body && typeof body === 'object') {
    for (const [name, value] of Object.entries(body)) if (typeof value === 'string') body[name] = await resolveId(client, name, value);
  }
}

/** What a deleting command asks before it runs: `Delete instance web-1? [y/N]`. */
async function confirmed(command: Command, positionals: string[], io: Io): Promise<boolean> {
  const what = LOOKUPS[command.positionals[0]?.name ?? '']?.label ?? command.group.replace(/-/g, ' ');
  const answer = await io.ask(`${command.verb[0]!.toUpperCase()}${command.verb.slice(1)} ${what} ${positionals.join(' ')}? [y/N] `);
  return /^y(es)?$/i.test(answer?.trim() ?? '');
}

async function newClient(target: Target): Promise<PlatformClient> {
  const { createPlatformClient } = await import('../client.ts');
  return createPlatformClient({ baseUrl: target.baseUrl, credential: target.apiKey ?? 'none', ...(target.org && { org: target.org }) });
}

export function targetOf(flags: Map<string, string[]>, io: Io, needsKey = true): Target {
  return resolveTarget(
    {
      baseUrl: last(flags, 'base-url'),
      apiKey: last(flags, 'api-key'),
      org: last(flags, 'org'),
      context: last(flags, 'context') ?? last(flags, 'profile'),
    },
    io.env,
    io.stderr,
    needsKey,
  );
}

/** Runs one command line; resolves with the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  let command: Command | undefined;
  let format: OutputFormat = 'table';
  try {
    // The shells' completion scripts call back with the words typed so far, unfinished flags included.
    if (argv[0] === '__complete') {
      const { complete } = await import('./completion.ts');
      io.stdout(await complete(argv.slice(1), io, (flagsOf) => targetOf(flagsOf, { ...io, stderr: () => {} })));
      return EXIT.ok;
    }
    const { positionals, flags } = parse(argv);
    format = outputOf(flags);
    const [first, second, ...rest] = positionals;
    if (first === undefined) {
      io.stdout(usage());
      return isTrue(flags, 'help') ? EXIT.ok : EXIT.usage;
    }
    if (first === 'help') return help(second, rest[0], io);
    const group = canonicalGroup(first);
    if (!allGroups().includes(group)) {
      throw new UsageError(`no command "${first}"${didYouMean(first, allGroups())} (see \`cloud help\`)`);
    }
    if (second === undefined) {
      io.stdout(groupHelp(group));
      return isTrue(flags, 'help') ? EXIT.ok : EXIT.usage;
    }
    if (group === 'completion') {
      const { completionScript } = await import('./completion.ts');
      if (second !== 'bash' && second !== 'zsh' && second !== 'fish')
        throw new UsageError(`cloud completion bash|zsh|fish${didYouMean(second, ['bash', 'zsh', 'fish'])}`);
      io.stdout(completionScript(second));
      return EXIT.ok;
    }
    if (group === 'context') {
      if (isTrue(flags, 'help')) return help(group, second, io);
      const { contextCommand } = await import('./context-commands.ts');
      return await contextCommand(second, rest, flags, io);
    }
    if (group === 'vm' && second === 'console') {
      if (isTrue(flags, 'help')) return help(group, second, io);
      const { attachConsole } = await import('./console.ts');
      if (rest.length !== 1) throw new UsageError("vm console takes <vm>: the instance's name or id");
      const target = targetOf(flags, io);
      const client = await newClient(target);
      return await attachConsole(client, await resolveId(client, 'vm_id', rest[0]!), io, Number(last(flags, 'timeout') ?? 600));
    }
    if (group === 'event' && second === 'listen') {
      if (isTrue(flags, 'help')) return help(group, second, io);
      const forwardTo = last(flags, 'forward-to');
      if (!forwardTo) throw new UsageError('event listen needs --forward-to <url>, such as http://localhost:3000/hooks');
      const { listen } = await import('./listen.ts');
      const forSeconds = last(flags, 'for');
      return await listen(
        await newClient(targetOf(flags, io)),
        {
          forwardTo,
          secret: last(flags, 'secret'),
          types: last(flags, 'types')?.split(',').filter(Boolean),
          pollMs: Number(last(flags, 'poll-ms') ?? 1000),
          ...(forSeconds !== undefined && { forSeconds: Number(forSeconds) }),
        },
        io,
      );
    }
    command = findCommand(group, second);
    if (!command) {
      throw new UsageError(
        `no command "${group} ${second}"${didYouMean(second, verbsOf(group), (verb) => `${group} ${verb}`)} (see \`cloud ${group} --help\`)`,
      );
    }
    if (isTrue(flags, 'help')) {
      io.stdout(commandHelp(command));
      return EXIT.ok;
    }
    const request = requestOf(command, rest, flags, io);
    const options = renderOptions(flags, command.responseSchema);
    const target = targetOf(flags, io, !command.public);
    const client = await newClient(target);
    await resolveNames(client, request);
    if (command.method === 'DELETE' && !isTrue(flags, 'force') && !(await confirmed(command, rest, io))) {
      io.stderr(`cloud: nothing done (answer y to confirm, or pass --force)\n`);
      return EXIT.usage;
    }
    const untyped = client as unknown as UntypedClient;
    if (isTrue(flags, 'all') && command.paginated) {
      const items: unknown[] = [];
      for await (const item of untyped.paginate(command.operationId, { ...request, query: { limit: 200, ...request.query } }))
        items.push(item);
      io.stdout(await render({ items, next_cursor: null }, options));
      return EXIT.ok;
    }
    const body = await untyped.call(command.operationId, request);
    const operation = operationOf(body);
    if (isTrue(flags, 'wait') && operation) {
      const timeout = Number(last(flags, 'timeout') ?? 600);
      if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError('--timeout is a number of seconds');
      const { waitFor, finalState } = await import('./wait.ts');
      const finished = await waitFor(client, operation, timeout, io);
      io.stdout(await render(await finalState(client, body, finished), options));
      return EXIT.ok;
    }
    io.stdout(await render(body, options));
    return EXIT.ok;
  } catch (error) {
    return reportError(error, format, io, command);
  }
}

function help(group: string | undefined, verb: string | undefined, io: Io): number {
  if (!group) {
    io.stdout(usage());
    return EXIT.ok;
  }
  const canonical = canonicalGroup(group);
  if (!allGroups().includes(canonical)) throw new UsageError(`no command "${group}"${didYouMean(group, allGroups())} (see \`cloud help\`)`);
  if (!verb) {
    io.stdout(groupHelp(canonical));
    return EXIT.ok;
  }
  const command = findCommand(canonical, verb);
  if (command) {
    io.stdout(commandHelp(command));
    return EXIT.ok;
  }
  const extra = EXTRA_COMMANDS.find((candidate) => candidate.group === canonical && candidate.verb === verb);
  if (extra) {
    io.stdout(extraHelp(extra));
    return EXIT.ok;
  }
  throw new UsageError(
    `no command "${canonical} ${verb}"${didYouMean(verb, verbsOf(canonical), (candidate) => `${canonical} ${candidate}`)}`,
  );
}

const EXTRA_DETAILS: Record<string, string> = {
  'event listen':
    'Polls the event log (every second) and POSTs each new event to the URL, signed as the platform signs webhooks (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) with a signing secret of this session, printed at start (or --secret whsec_…). Flags: --types a.b,c.d (only these types), --for <seconds> (stop after; else until Ctrl-C), --poll-ms <ms>. Trigger an event with `cloud webhook-endpoint test <endpoint>` or any change.\n\nExample:\n  cloud events listen --forward-to http://localhost:3000/hooks',
  'vm console':
    'Requests a console (a vm.console operation), waits for it, collects its single-use URL and connects to it: what the instance writes appears here, what you type goes to it (the terminal in raw mode). Ctrl-] detaches and restores the terminal.\n\nExample:\n  cloud vm console web-1',
  'context create':
    'Flags: --base-url <url> (required, or CLOUD_BASE_URL), --api-key <key> (optional: else asked for without echo, or read from standard input). The key is checked with GET /v1/account, which also tells the organization; the context is saved in the config file (mode 0600) and made current.\n\nExample:\n  cloud context create dev --base-url http://127.0.0.1:8080 < key.txt',
  'context use': 'Example:\n  cloud context use dev',
  'context list': 'The current context is marked with *. Keys are never printed.\n\nExample:\n  cloud context list',
  'context delete': 'Asks for confirmation unless --force.\n\nExample:\n  cloud context delete dev --force',
};

function extraHelp(extra: (typeof EXTRA_COMMANDS)[number]): string {
  const details = EXTRA_DETAILS[`${extra.group} ${extra.verb}`] ?? `Example:\n  source <(cloud completion ${extra.verb})`;
  return `${extra.summary}\n\nUsage:\n  cloud ${extra.group} ${extra.verb} ${extra.arguments}\n\n${details}\n`;
}

/** The operation a response carries: `{operation}` of a 202, or the operation itself (cancel). */
function operationOf(body: unknown): Operation | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const candidate = (body as { operation?: unknown }).operation ?? body;
  return isOperation(candidate) ? (candidate as unknown as Operation) : undefined;
}

function reportError(error: unknown, format: OutputFormat, io: Io, command: Command | undefined): number {
  if (error instanceof UsageError) {
    io.stderr(`cloud: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof NameError) {
    io.stderr(`cloud: ${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof ProblemError) {
    io.stderr(format === 'table' ? renderProblem(error, command) : `${JSON.stringify(error.problem, null, 2)}\n`);
    return error.status >= 500 ? EXIT.unavailable : EXIT.refused;
  }
  if (error instanceof OperationFailedError) {
    io.stderr(
      format === 'table'
        ? `Operation ${error.operation.id} ${error.operation.state}: ${error.operation.error_detail ?? 'no detail'}\n`
        : `${JSON.stringify(error.operation, null, 2)}\n`,
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
