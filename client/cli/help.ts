// The help: the list of commands, and each command's own page with every flag, its type, whether
// it is required, its default and an example, all read from the contract.
import { GLOBAL_FLAGS } from './args.ts';
import { commands, type Command, type Flag } from './commands.ts';
import { LOOKUPS } from './names.ts';

/** Commands written by hand beside the contract's (they have no operation of their own). */
export const EXTRA_COMMANDS: Array<{ group: string; verb: string; arguments: string; summary: string }> = [
  { group: 'vm', verb: 'console', arguments: '<vm>', summary: 'Attach this terminal to the serial console (Ctrl-] detaches)' },
  {
    group: 'event',
    verb: 'listen',
    arguments: '--forward-to <url>',
    summary: 'Follow the event log and deliver each new event, signed, to a local URL',
  },
  { group: 'context', verb: 'create', arguments: '<name>', summary: 'Save a base URL and API key as a context, and use it' },
  { group: 'context', verb: 'use', arguments: '<name>', summary: 'Make a context the current one' },
  { group: 'context', verb: 'list', arguments: '', summary: 'List the contexts' },
  { group: 'context', verb: 'delete', arguments: '<name>', summary: 'Delete a context' },
  { group: 'completion', verb: 'bash', arguments: '', summary: 'Print the bash completion script' },
  { group: 'completion', verb: 'zsh', arguments: '', summary: 'Print the zsh completion script' },
  { group: 'completion', verb: 'fish', arguments: '', summary: 'Print the fish completion script' },
];

/** `<vm>` for `vm_id` (a name or an id), `<operation_id>` where only an id will do. */
export const argumentName = (parameter: string) => (LOOKUPS[parameter] ? `<${parameter.replace(/_id$/, '')}>` : `<${parameter}>`);

const WIDTH = 100;

const exampleText = (value: unknown, otherwise: string) =>
  value === undefined ? otherwise : typeof value === 'string' ? value : JSON.stringify(value);

/** Wraps text to WIDTH columns, each line after `indent`. */
function wrap(text: string, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && indent.length + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((text) => `${indent}${text}`).join('\n');
}

/** A flag's value as typed on a command line: `--labels env=production --labels team=web`, `--ssh-keys alice-laptop`. */
export function exampleFlag(flag: Flag, value: unknown): string {
  const quote = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);
  if (flag.kind === 'map' && value && typeof value === 'object') {
    return Object.entries(value)
      .map(([key, entry]) => `--${flag.flag} ${quote(`${key}=${String(entry)}`)}`)
      .join(' ');
  }
  if (flag.kind === 'list' && Array.isArray(value)) return `--${flag.flag} ${quote(value.map(String).join(','))}`;
  if (flag.kind === 'boolean' && value === true) return `--${flag.flag}`;
  if (flag.kind === 'json' || (value !== null && typeof value === 'object')) return `--${flag.flag} ${quote(JSON.stringify(value))}`;
  return `--${flag.flag} ${quote(String(value))}`;
}

/** The example command line: the positionals' and flags' examples (the required flags, and the operation's request example). */
export function exampleLine(command: Command): string {
  const words = [`cloud ${command.group} ${command.verb}`];
  for (const positional of command.positionals)
    words.push(LOOKUPS[positional.name]?.example ?? exampleText(positional.example, `<${positional.name}>`));
  for (const flag of command.flags) {
    const fromBody = flag.in === 'body' ? command.bodyExample?.[flag.name] : undefined;
    if (fromBody !== undefined) words.push(exampleFlag(flag, fromBody));
    else if (flag.required && flag.example !== undefined) words.push(exampleFlag(flag, flag.example));
  }
  return words.join(' ');
}

export function commandHelp(command: Command): string {
  const required = command.flags.filter((flag) => flag.required).map((flag) => `--${flag.flag} <${flag.kind}>`);
  const lines = [
    `${command.summary}`,
    '',
    'Usage:',
    `  cloud ${command.group} ${command.verb} ${[...command.positionals.map((positional) => argumentName(positional.name)), ...required, '[flags]'].join(' ')}`,
    '',
    wrap(command.description.split(/\n\s*\n/)[0] ?? '', ''),
    '',
  ];
  if (command.positionals.length > 0) {
    lines.push('Arguments:');
    for (const positional of command.positionals) {
      const lookup = LOOKUPS[positional.name];
      lines.push(`  ${argumentName(positional.name)}  required`);
      lines.push(wrap(lookup ? `The ${lookup.label}'s ${lookup.keys[0]} or id.` : positional.description, '      '));
      if (positional.example !== undefined) lines.push(`      example: ${exampleText(positional.example, '')}`);
    }
    lines.push('');
  }
  if (command.flags.length > 0) {
    lines.push('Flags:');
    for (const flag of command.flags) {
      const facts = [
        flag.required ? 'required' : 'optional',
        flag.default !== undefined ? `default: ${JSON.stringify(flag.default)}` : 'no default',
      ];
      lines.push(`  --${flag.flag} <${flag.type}>  ${facts.join(', ')}`);
      if (flag.description) lines.push(wrap(flag.description, '      '));
      const example = (flag.in === 'body' ? command.bodyExample?.[flag.name] : undefined) ?? flag.example ?? flag.default;
      if (example !== undefined) lines.push(`      example: ${exampleFlag(flag, example)}`);
    }
    lines.push('');
  }
  if (command.body)
    lines.push('  A field that takes an object or a list of objects takes JSON; --body sends a whole body (JSON, @file or -).', '');
  lines.push('Global flags:', ...globalFlagLines(), '');
  lines.push(
    'Example:',
    `  ${exampleLine(command)}${command.method !== 'GET' && /operation/.test(command.description) ? ' --wait' : ''}`,
    '',
  );
  return lines.join('\n');
}

function globalFlagLines(): string[] {
  return Object.entries(GLOBAL_FLAGS)
    .filter(([name]) => name !== 'profile')
    .map(([name, spec]) => {
      const left = `${'short' in spec ? `-${spec.short}, ` : '    '}--${name}${'value' in spec ? ` <${spec.value}>` : ''}`;
      return `  ${left.padEnd(34)} ${spec.help}`;
    });
}

export function groupHelp(group: string): string {
  const lines = [`cloud ${group} <command> [arguments] [flags]`, '', 'Commands:'];
  for (const command of commands().filter((candidate) => candidate.group === group)) {
    lines.push(
      `  ${`${command.verb} ${command.positionals.map((positional) => argumentName(positional.name)).join(' ')}`.trimEnd().padEnd(40)} ${command.summary}`,
    );
  }
  for (const extra of EXTRA_COMMANDS.filter((candidate) => candidate.group === group)) {
    lines.push(`  ${`${extra.verb} ${extra.arguments}`.trimEnd().padEnd(40)} ${extra.summary}`);
  }
  lines.push('', `\`cloud ${group} <command> --help\` shows a command's flags.`, '');
  return lines.join('\n');
}

export function usage(): string {
  const byGroup = new Map<string, string[]>();
  const add = (group: string, line: string) => byGroup.set(group, [...(byGroup.get(group) ?? []), line]);
  for (const command of commands()) {
    add(
      command.group,
      `  ${`${command.verb} ${command.positionals.map((positional) => argumentName(positional.name)).join(' ')}`.trimEnd().padEnd(40)} ${command.summary}`,
    );
  }
  for (const extra of EXTRA_COMMANDS) add(extra.group, `  ${`${extra.verb} ${extra.arguments}`.trimEnd().padEnd(40)} ${extra.summary}`);
  const lines = [
    'cloud <group> <command> [arguments] [flags]',
    '',
    'The command-line client of the Cloud Platform API. Names work wherever an id is asked (`cloud vm get web-1`).',
    'Set up once: `cloud context create dev --base-url URL` (asks for the API key; the organization is learned from it).',
    "`cloud help <group> <command>` or `cloud <group> <command> --help` shows a command's flags, types, defaults and an example.",
    'Exit codes: 0 done, 1 usage, 2 refused (4xx), 3 server or network, 4 operation failed, 5 cancelled, 6 --wait timed out.',
    '',
    'Global flags:',
    ...globalFlagLines(),
    '',
  ];
  for (const [group, entries] of byGroup) lines.push(group, ...entries);
  return `${lines.join('\n')}\n`;
}
