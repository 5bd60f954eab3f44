// The command line, split into words and flags. Which flags take a value is known only once the
// command is (a boolean body field such as `--versioning` takes none), so the caller says it per
// flag name, learning the command from the first positional words.

/** Flags every command takes (besides its own), with their short forms. */
export const GLOBAL_FLAGS = {
  output: { short: 'o', value: 'table|json|yaml', help: 'How to print the answer: a table for people (default), or exact JSON or YAML.' },
  columns: { value: 'list', help: 'The table columns, comma-separated: the default ones (see the list) or any field of the item.' },
  'no-header': { help: 'Print the table without its header line.' },
  all: { help: 'With a list: follow next_cursor to the last page.' },
  wait: { help: 'Follow the operation a change returns until it ends, then print the final state.' },
  timeout: { value: 'seconds', help: 'How long --wait waits (default 600).' },
  force: { short: 'f', help: 'Delete (or revoke, release, cancel) without asking for confirmation.' },
  body: { value: 'JSON|@file|-', help: 'The whole request body, as JSON, a file, or standard input; flags add fields to it.' },
  context: { value: 'name', help: 'The context to use (see `cloud context list`); also CLOUD_CONTEXT.' },
  profile: { value: 'name', help: 'Another name for --context.' },
  'base-url': { value: 'url', help: 'The API address (else CLOUD_BASE_URL, the context, ./data/bootstrap.json).' },
  'api-key': { value: 'key', help: 'The API key (else CLOUD_API_KEY, the context, ./data/bootstrap.json); prefer a context.' },
  org: { value: 'uuid', help: 'The organization (else CLOUD_ORG, the context, or the one the key opens).' },
  help: { short: 'h', help: 'Show the help of the command.' },
} as const satisfies Record<string, { short?: string; value?: string; help: string }>;

export type GlobalFlag = keyof typeof GLOBAL_FLAGS;

const SHORT: Record<string, string> = Object.fromEntries(
  Object.entries(GLOBAL_FLAGS).flatMap(([name, spec]) => ('short' in spec ? [[spec.short, name]] : [])),
);

export class UsageError extends Error {}

export interface ParsedArguments {
  positionals: string[];
  /** Each flag's values in order (a boolean flag given bare holds 'true'). */
  flags: Map<string, string[]>;
}

/**
 * Splits `--name value`, `--name=value`, `-o json`, bare boolean flags and `--` from positionals.
 * `valueFlag(name, positionalsSoFar)` says whether the flag takes a value: true, false, or
 * 'optional' (a boolean that may be followed by true or false).
 */
export function parseArguments(argv: string[], valueFlag: (name: string, positionals: string[]) => boolean | 'optional'): ParsedArguments {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const add = (name: string, value: string) => flags.set(name, [...(flags.get(name) ?? []), value]);
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (argument === '--') {
      positionals.push(...argv.slice(index + 1));
      break;
    }
    const long = /^--([^=]+)(?:=(.*))?$/s.exec(argument);
    const short = /^-([A-Za-z])(.*)$/s.exec(argument);
    if (!long && !short) {
      positionals.push(argument);
      continue;
    }
    const name = long ? long[1]! : (SHORT[short![1]!] ?? short![1]!);
    const inline = long ? long[2] : short![2] ? short![2].replace(/^=/, '') : undefined;
    if (inline !== undefined) {
      add(name, inline);
      continue;
    }
    const takes = valueFlag(name, positionals);
    const next = argv[index + 1];
    if (takes === true && next !== undefined) {
      add(name, next);
      index++;
    } else if (takes === 'optional' && (next === 'true' || next === 'false')) {
      add(name, next);
      index++;
    } else if (takes === true) {
      throw new UsageError(`--${name} needs a value`);
    } else {
      add(name, 'true');
    }
  }
  return { positionals, flags };
}

/** The last value of a flag, if given. */
export const last = (flags: Map<string, string[]>, name: string): string | undefined => flags.get(name)?.at(-1);

export const isTrue = (flags: Map<string, string[]>, name: string): boolean => {
  const value = last(flags, name);
  return value !== undefined && value !== 'false';
};
