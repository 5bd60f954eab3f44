// Where the CLI sends requests and with which credential: named contexts in a config file only its
// owner can read (`cloud context create|use|list|delete`), flags and environment variables above
// them, and the bootstrap file `npm start` writes below them.
//   flags (--base-url, --api-key, --org) > environment (CLOUD_BASE_URL, CLOUD_API_KEY, CLOUD_ORG)
//   > the context (--context, CLOUD_CONTEXT, else the current one) > ./data/bootstrap.json
// An explicit --context wins over the environment. The organization comes with the key it belongs
// to (never a key of one source with the organization of another); when no source names it, the
// client learns it from GET /v1/account.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { UsageError } from './args.ts';

export interface Context {
  base_url: string;
  api_key: string;
  /** Learned from GET /v1/account when the context was created. */
  org_id?: string;
  org_name?: string;
}

/** The config file: `{"current_context": "dev", "contexts": {"dev": {...}}}` (`default_profile`/`profiles` are read too). */
export interface ConfigFile {
  current_context?: string;
  contexts?: Record<string, Context>;
  default_profile?: string;
  profiles?: Record<string, Context>;
}

export interface Target {
  baseUrl: string;
  apiKey: string | undefined;
  org: string | undefined;
  /** The context used, if any. */
  context: string | undefined;
}

/** CLOUD_CONFIG, else $XDG_CONFIG_HOME/cloud-platform/config.json, else ~/.config/cloud-platform/config.json. */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.CLOUD_CONFIG) return env.CLOUD_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), '.config');
  return path.join(base, 'cloud-platform', 'config.json');
}

export function readConfig(file: string, warn?: (text: string) => void): ConfigFile {
  if (!existsSync(file)) return {};
  // The file holds API keys: say so when others can read it (ssh refuses such a key outright).
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
    warn?.(`cloud: ${file} can be read by other users; \`chmod 600 ${file}\` (it holds API keys)\n`);
  }
  let parsed: ConfigFile;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as ConfigFile;
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  return {
    current_context: parsed.current_context ?? parsed.default_profile,
    contexts: { ...parsed.profiles, ...parsed.contexts },
  };
}

/** Writes the config file readable by its owner only (0600, in a 0700 folder), replacing it whole. */
export function writeConfig(file: string, config: ConfigFile): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ current_context: config.current_context, contexts: config.contexts ?? {} }, null, 2)}\n`, {
    mode: 0o600,
  });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

interface Bootstrap {
  base_url?: string;
  api_key?: string;
  org_id?: string;
}

function readBootstrap(env: NodeJS.ProcessEnv): { file: string; bootstrap: Bootstrap | undefined } {
  const file = path.join(env.DATA_DIR ?? 'data', 'bootstrap.json');
  if (!existsSync(file)) return { file, bootstrap: undefined };
  try {
    return { file, bootstrap: JSON.parse(readFileSync(file, 'utf8')) as Bootstrap };
  } catch {
    return { file, bootstrap: undefined };
  }
}

/** Where to send requests and with which key; `needsKey: false` for the health probes. */
export function resolveTarget(
  flags: { baseUrl?: string | undefined; apiKey?: string | undefined; org?: string | undefined; context?: string | undefined },
  env: NodeJS.ProcessEnv,
  warn: (text: string) => void,
  needsKey = true,
): Target {
  const file = configPath(env);
  const config = readConfig(file, warn);
  const explicit = flags.context ?? (env.CLOUD_CONTEXT || env.CLOUD_PROFILE || undefined);
  const name = explicit ?? config.current_context;
  const context = name ? config.contexts?.[name] : undefined;
  if (explicit && !context) {
    const known = Object.keys(config.contexts ?? {});
    throw new UsageError(
      `no context "${explicit}" in ${file}${known.length ? ` (contexts: ${known.join(', ')})` : '; create one with `cloud context create`'}`,
    );
  }
  const { file: bootstrapFile, bootstrap } = readBootstrap(env);
  const fromEnv = {
    base_url: env.CLOUD_BASE_URL || undefined,
    api_key: env.CLOUD_API_KEY || undefined,
    org_id: env.CLOUD_ORG || undefined,
  };
  // The sources in order; the key (with its organization) comes from the first that has one.
  const sources: Array<{ base_url?: string | undefined; api_key?: string | undefined; org_id?: string | undefined }> = explicit
    ? [context!, fromEnv, bootstrap ?? {}]
    : [fromEnv, context ?? {}, bootstrap ?? {}];
  const baseUrl = flags.baseUrl ?? sources.find((source) => source.base_url)?.base_url;
  const keySource = flags.apiKey ? undefined : sources.find((source) => source.api_key);
  const apiKey = flags.apiKey ?? keySource?.api_key;
  const org = flags.org ?? (fromEnv.org_id || undefined) ?? keySource?.org_id;
  const missing = [
    !baseUrl && 'a base URL (--base-url, CLOUD_BASE_URL)',
    needsKey && !apiKey && 'an API key (--api-key, CLOUD_API_KEY)',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new UsageError(
      `missing ${missing.join(' and ')}; create a context with \`cloud context create NAME --base-url URL\`, or start a server beside ${bootstrapFile}`,
    );
  }
  return {
    baseUrl: baseUrl!.replace(/\/$/, ''),
    apiKey,
    org,
    context: context && (keySource === context || !keySource) ? name : undefined,
  };
}
