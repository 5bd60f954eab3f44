// `cloud context create|use|list|delete`: named pairs of an API address and a key, kept in the
// config file (mode 0600), the current one used by every command. Creating one asks the API whose
// key it is (GET /v1/account): the key is checked, and the organization learned, at once.
import { isTrue, last, UsageError } from './args.ts';
import { configPath, readConfig, writeConfig, type ConfigFile } from './contexts.ts';
import { EXIT, type Io } from './io.ts';
import { render, renderOptions } from './output.ts';
import { didYouMean } from './suggest.ts';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export async function contextCommand(verb: string, args: string[], flags: Map<string, string[]>, io: Io): Promise<number> {
  const file = configPath(io.env);
  const config = readConfig(file, io.stderr);
  const contexts = config.contexts ?? {};
  const named = (): string => {
    if (args.length !== 1) throw new UsageError(`context ${verb} takes <name>`);
    return args[0]!;
  };
  const existing = (): string => {
    const name = named();
    if (!contexts[name]) {
      throw new UsageError(
        `no context "${name}"${didYouMean(name, Object.keys(contexts))} (contexts: ${Object.keys(contexts).join(', ') || 'none'})`,
      );
    }
    return name;
  };
  const save = (next: ConfigFile) => writeConfig(file, next);
  switch (verb) {
    case 'create': {
      const name = named();
      if (!NAME.test(name)) throw new UsageError('a context name is letters, digits, dots, hyphens and underscores (at most 63)');
      const baseUrl = (last(flags, 'base-url') ?? io.env.CLOUD_BASE_URL)?.replace(/\/$/, '');
      if (!baseUrl) throw new UsageError('context create needs --base-url <url> (the API address, such as http://127.0.0.1:8080)');
      const apiKey = last(flags, 'api-key') ?? (await io.ask('API key: ', { secret: true }))?.trim();
      if (!apiKey) throw new UsageError('context create needs an API key: --api-key, or typed when asked (or one line on standard input)');
      const { createPlatformClient } = await import('../client.ts');
      const account = await createPlatformClient({ baseUrl, credential: apiKey }).call('getAccount');
      save({
        current_context: name,
        contexts: { ...contexts, [name]: { base_url: baseUrl, api_key: apiKey, org_id: account.org_id, org_name: account.org_name } },
      });
      io.stderr(
        `Context "${name}" ${contexts[name] ? 'replaced' : 'created'} and in use: ${account.org_name} (organization ${account.org_id}) at ${baseUrl}, ` +
          `key "${account.credential.name}" (${account.credential.scopes.join(', ')}); saved in ${file}\n`,
      );
      return EXIT.ok;
    }
    case 'use': {
      const name = existing();
      save({ ...config, current_context: name });
      io.stderr(`Using context "${name}" (${contexts[name]!.org_name ?? 'organization'} at ${contexts[name]!.base_url})\n`);
      return EXIT.ok;
    }
    case 'list': {
      if (args.length > 0) throw new UsageError('context list takes no arguments');
      const items = Object.entries(contexts).map(([name, context]) => ({
        current: name === config.current_context ? '*' : '',
        name,
        organization: context.org_name ?? null,
        org_id: context.org_id ?? null,
        base_url: context.base_url,
        // Never the key: only enough of its end to tell two apart.
        key: context.api_key ? `…${context.api_key.slice(-4)}` : null,
      }));
      io.stdout(await render({ items, next_cursor: null }, renderOptions(flags, undefined)));
      return EXIT.ok;
    }
    case 'delete': {
      const name = existing();
      if (!isTrue(flags, 'force')) {
        const answer = await io.ask(
          `Delete context "${name}" (${contexts[name]!.org_name ?? ''} at ${contexts[name]!.base_url}) and its key? [y/N] `,
        );
        if (!/^y(es)?$/i.test(answer?.trim() ?? '')) {
          io.stderr('cloud: nothing done (answer y to confirm, or pass --force)\n');
          return EXIT.usage;
        }
      }
      const rest = Object.fromEntries(Object.entries(contexts).filter(([other]) => other !== name));
      save({ current_context: config.current_context === name ? undefined : config.current_context, contexts: rest });
      io.stderr(`Context "${name}" deleted\n`);
      return EXIT.ok;
    }
    default:
      throw new UsageError(
        `no command "context ${verb}"${didYouMean(verb, ['create', 'use', 'list', 'delete'], (candidate) => `context ${candidate}`)}`,
      );
  }
}
