// Shell completion: each shell's script asks the CLI itself (`cloud __complete <words>`), which
// answers from the same command table (commands, flags, enum values, contexts) and, for an
// argument that names a resource, from the API (the instances' names for `cloud vm get <TAB>`).
// One candidate a line, `value<TAB>description`; zsh and fish show the descriptions.
import { GLOBAL_FLAGS, UsageError } from './args.ts';
import { commands, findCommand, groups } from './commands.ts';
import { configPath, readConfig, type Target } from './contexts.ts';
import { EXTRA_COMMANDS } from './help.ts';
import type { Io } from './io.ts';
import { namesOf } from './names.ts';

export function completionScript(shell: 'bash' | 'zsh' | 'fish'): string {
  switch (shell) {
    case 'bash':
      return `# cloud: bash completion. Load it with: source <(cloud completion bash)
_cloud() {
  local IFS=$'\\n'
  local candidates
  candidates=($(cloud __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  COMPREPLY=("\${candidates[@]%%$'\\t'*}")
}
complete -o default -F _cloud cloud
`;
    case 'zsh':
      return `#compdef cloud
# cloud: zsh completion. Load it with: source <(cloud completion zsh) (after compinit)
_cloud() {
  local -a candidates values descriptions
  local candidate
  candidates=("\${(@f)$(cloud __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  for candidate in "\${candidates[@]}"; do
    [[ -z $candidate ]] && continue
    values+=("\${candidate%%$'\\t'*}")
    descriptions+=("\${candidate/$'\\t'/  -- }")
  done
  compadd -l -d descriptions -a values
}
compdef _cloud cloud
`;
    case 'fish':
      return `# cloud: fish completion. Load it with: cloud completion fish | source
function __cloud_complete
    set -l words (commandline -opc) (commandline -ct)
    cloud __complete $words[2..-1] 2>/dev/null
end
complete -c cloud -f -a '(__cloud_complete)'
`;
  }
}

interface Candidate {
  value: string;
  description?: string;
}

const lines = (candidates: Candidate[], prefix: string) =>
  candidates
    .filter((candidate) => candidate.value.startsWith(prefix))
    .map((candidate) => (candidate.description ? `${candidate.value}\t${candidate.description}` : candidate.value))
    .join('\n') + '\n';

/** The candidates for the last of `words` (the words after `cloud`, the last one being typed). */
export async function complete(words: string[], io: Io, targetOf: (flags: Map<string, string[]>) => Target): Promise<string> {
  const current = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  for (let index = 0; index < before.length; index++) {
    const word = before[index]!;
    if (word.startsWith('-')) {
      const name = word.replace(/^-+/, '').split('=')[0]!;
      const spec = GLOBAL_FLAGS[name as keyof typeof GLOBAL_FLAGS] as { value?: string } | undefined;
      if (!word.includes('=') && before[index + 1] !== undefined && (spec ? spec.value !== undefined : true)) {
        flags.set(name, [before[index + 1]!]);
        index++;
      }
    } else positionals.push(word);
  }
  const [group, verb] = positionals;
  const previous = before.at(-1);
  const command = group && verb ? findCommand(group, verb) : undefined;

  // The value of a flag: its enum, or the contexts.
  if (previous?.startsWith('-') && !current.startsWith('-')) {
    const name = previous.replace(/^-+/, '');
    if (name === 'output' || name === 'o')
      return lines(
        ['table', 'json', 'yaml'].map((value) => ({ value })),
        current,
      );
    if (name === 'context' || name === 'profile') return lines(contextNames(io), current);
    const flag = command?.flags.find((candidate) => candidate.flag === name);
    if (flag?.enum)
      return lines(
        flag.enum.map((value) => ({ value })),
        current,
      );
    if (flag?.kind === 'boolean') return lines([{ value: 'true' }, { value: 'false' }], current);
    if (flag || GLOBAL_FLAGS[name as keyof typeof GLOBAL_FLAGS]) return '';
  }
  if (current.startsWith('-')) {
    const own = (command?.flags ?? []).map((flag) => ({
      value: `--${flag.flag}`,
      description: `${flag.required ? 'required, ' : ''}${flag.type}`,
    }));
    const global = Object.entries(GLOBAL_FLAGS).map(([name, spec]) => ({ value: `--${name}`, description: spec.help }));
    return lines([...own, ...global], current);
  }
  if (positionals.length === 0) {
    const all = [...new Set([...groups(), ...EXTRA_COMMANDS.map((extra) => extra.group), 'help'])];
    return lines(
      all.map((value) => ({ value })),
      current,
    );
  }
  if (positionals.length === 1) {
    const verbs = [
      ...commands()
        .filter((candidate) => candidate.group === group)
        .map((candidate) => ({ value: candidate.verb, description: candidate.summary })),
      ...EXTRA_COMMANDS.filter((extra) => extra.group === group).map((extra) => ({ value: extra.verb, description: extra.summary })),
    ];
    if (group === 'help')
      return lines(
        [...new Set([...groups(), 'context', 'completion'])].map((value) => ({ value })),
        current,
      );
    return lines(verbs, current);
  }
  if (group === 'context' && (verb === 'use' || verb === 'delete') && positionals.length === 2) return lines(contextNames(io), current);
  const parameter = group === 'vm' && verb === 'console' ? 'vm_id' : command?.positionals[positionals.length - 2]?.name;
  if (!parameter) return '';
  return lines(await resourceNames(parameter, flags, targetOf), current);
}

function contextNames(io: Io): Candidate[] {
  const config = readConfig(configPath(io.env));
  return Object.entries(config.contexts ?? {}).map(([value, context]) => ({
    value,
    description: `${context.org_name ?? ''} ${context.base_url}`.trim(),
  }));
}

/** The names of the resources an argument takes, from the API; nothing when it cannot be reached quickly. */
async function resourceNames(
  parameter: string,
  flags: Map<string, string[]>,
  targetOf: (flags: Map<string, string[]>) => Target,
): Promise<Candidate[]> {
  try {
    const target = targetOf(flags);
    const { createPlatformClient } = await import('../client.ts');
    const client = createPlatformClient({
      baseUrl: target.baseUrl,
      credential: target.apiKey ?? 'none',
      ...(target.org && { org: target.org }),
      retry: { maxAttempts: 1 },
    });
    const names = await namesOf(client, parameter, AbortSignal.timeout(3000));
    return names.map((entry) => ({ value: entry.name, description: entry.description }));
  } catch (error) {
    if (error instanceof UsageError) return [];
    return [];
  }
}
