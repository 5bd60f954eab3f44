// Shell completion of groups and verbs, from the same command table as the CLI itself.
import { commands } from './commands.ts';

export function completionScript(shell: 'bash' | 'zsh'): string {
  const groups = new Map<string, string[]>();
  for (const command of commands()) groups.set(command.group, [...(groups.get(command.group) ?? []), command.verb]);
  const cases = [...groups].map(([group, verbs]) => `    ${group}) COMPREPLY=($(compgen -W "${verbs.join(' ')}" -- "$cur")) ;;`).join('\n');
  const bash = `# cloud: bash completion (source it: source <(cloud completion bash))
_cloud() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${[...groups.keys(), 'completion', 'help'].join(' ')}" -- "$cur"))
    return
  fi
  if [ "$COMP_CWORD" -eq 2 ]; then
    case "\${COMP_WORDS[1]}" in
${cases}
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    esac
    return
  fi
  COMPREPLY=($(compgen -W "--output --wait --timeout --body --profile --base-url --api-key --org --help" -- "$cur"))
}
complete -F _cloud cloud
`;
  return shell === 'bash' ? bash : `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
}
