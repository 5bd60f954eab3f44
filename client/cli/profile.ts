// Where the CLI sends requests and with which credential. First found wins: flags
// (--base-url, --api-key, --org), environment (CLOUD_BASE_URL, CLOUD_API_KEY, CLOUD_ORG), a
// profile of the config file (--profile or its default; CLOUD_CONFIG or
// ~/.config/cloud-platform/config.json), then bootstrap.json (./data, or DATA_DIR) as `npm start`
// writes it on its first start.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

export interface Profile {
  baseUrl: string;
  apiKey: string;
  org: string;
}

/** A profile of the config file: `{"default_profile": "dev", "profiles": {"dev": {"base_url", "api_key", "org_id"}}}`. */
interface ConfigFile {
  default_profile?: string;
  profiles?: Record<string, { base_url?: string; api_key?: string; org_id?: string }>;
}

export class ProfileError extends Error {}

export function resolveProfile(
  flags: { baseUrl?: string; apiKey?: string; org?: string; profile?: string },
  env: NodeJS.ProcessEnv,
): Profile {
  const configPath = env.CLOUD_CONFIG ?? path.join(homedir(), '.config', 'cloud-platform', 'config.json');
  const config = existsSync(configPath) ? (JSON.parse(readFileSync(configPath, 'utf8')) as ConfigFile) : undefined;
  const profileName = flags.profile ?? (env.CLOUD_PROFILE || undefined) ?? config?.default_profile;
  const fromConfig = profileName ? config?.profiles?.[profileName] : undefined;
  if (profileName && flags.profile && !fromConfig) throw new ProfileError(`no profile ${profileName} in ${configPath}`);
  const bootstrapPath = path.join(env.DATA_DIR ?? 'data', 'bootstrap.json');
  const bootstrap = existsSync(bootstrapPath)
    ? (JSON.parse(readFileSync(bootstrapPath, 'utf8')) as { base_url?: string; api_key?: string; org_id?: string })
    : undefined;
  const pick = (flag: string | undefined, envName: string, key: 'base_url' | 'api_key' | 'org_id') =>
    flag ?? (env[envName] || undefined) ?? fromConfig?.[key] ?? bootstrap?.[key];
  const baseUrl = pick(flags.baseUrl, 'CLOUD_BASE_URL', 'base_url');
  const apiKey = pick(flags.apiKey, 'CLOUD_API_KEY', 'api_key');
  const org = pick(flags.org, 'CLOUD_ORG', 'org_id');
  const missing = [
    !baseUrl && 'a base URL (--base-url, CLOUD_BASE_URL)',
    !apiKey && 'an API key (--api-key, CLOUD_API_KEY)',
    !org && 'an organization (--org, CLOUD_ORG)',
  ].filter(Boolean);
  if (missing.length > 0) throw new ProfileError(`missing ${missing.join(', ')}; or a profile in ${configPath}, or ${bootstrapPath}`);
  return { baseUrl: baseUrl!.replace(/\/$/, ''), apiKey: apiKey!, org: org! };
}
