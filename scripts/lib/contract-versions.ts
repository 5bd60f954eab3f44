import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { diffContracts, type ContractChange } from './contract-diff.ts';
import { repoRoot } from './run.ts';

/** Where released contracts are kept, one bundled document per version (`v1.0.0.json`). */
export const releasedDir = path.join(repoRoot, 'spec', 'released');
export const acceptedBreaksPath = path.join(releasedDir, 'accepted-breaks.yaml');

export interface Version {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

export function parseVersion(text: string): Version {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (!match) throw new Error(`"${text}" is not a version (MAJOR.MINOR.PATCH)`);
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]), text };
}

export const compareVersions = (a: Version, b: Version): number => a.major - b.major || a.minor - b.minor || a.patch - b.patch;

/** The released versions, oldest first. */
export function releasedVersions(dir = releasedDir): Version[] {
  return readdirSync(dir)
    .map((name) => /^v(\d+\.\d+\.\d+)\.json$/.exec(name)?.[1])
    .filter((text): text is string => text !== undefined)
    .map(parseVersion)
    .sort(compareVersions);
}

/** A bundled contract. Bounds beyond 2^53 are rounded alike in both documents, which is enough to compare them. */
export function readContract(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

export const releasedPath = (version: Version, dir = releasedDir): string => path.join(dir, `v${version.text}.json`);

export interface AcceptedBreak {
  /** The change's id, exactly as the check prints it. */
  id: string;
  /** The major version that carries the break. */
  version: string;
  reason: string;
}

export function readAcceptedBreaks(file = acceptedBreaksPath): AcceptedBreak[] {
  const parsed = (parseYaml(readFileSync(file, 'utf8')) ?? {}) as { accepted?: AcceptedBreak[] | null };
  const accepted = parsed.accepted ?? [];
  for (const entry of accepted) {
    if (
      typeof entry.id !== 'string' ||
      typeof entry.version !== 'string' ||
      typeof entry.reason !== 'string' ||
      entry.reason.trim() === ''
    ) {
      throw new Error(`${path.relative(repoRoot, file)}: every accepted break needs id, version and reason (${JSON.stringify(entry)})`);
    }
    parseVersion(entry.version);
  }
  return accepted;
}

export interface CheckResult {
  released: Version;
  current: Version;
  changes: ContractChange[];
  /** What fails the check, one sentence each. */
  failures: string[];
}

/** Six months of notice, as the versioning policy promises, in days. */
export const MIN_DEPRECATION_NOTICE_DAYS = 183;

/**
 * Compares the current contract with the latest released one and applies the versioning policy:
 * within a major version only additive changes; a break is allowed only when it is listed in the
 * accepted breaks with the (new, higher) major version that carries it; a newly deprecated
 * operation names when it was deprecated and its sunset, at least six months later.
 */
export function checkContract(options: {
  released: Record<string, unknown>;
  current: Record<string, unknown>;
  accepted: AcceptedBreak[];
  today?: Date;
}): CheckResult {
  const today = options.today ?? new Date();
  const released = parseVersion(String((options.released.info as { version: unknown }).version));
  const current = parseVersion(String((options.current.info as { version: unknown }).version));
  const changes = diffContracts(options.released, options.current, { today });
  const failures: string[] = [];
  if (compareVersions(current, released) < 0) failures.push(`info.version ${current.text} is older than the released ${released.text}.`);

  const pending = options.accepted.filter((entry) => compareVersions(parseVersion(entry.version), released) > 0);
  for (const change of changes.filter((change) => change.kind === 'breaking')) {
    const entry = pending.find((candidate) => candidate.id === change.id);
    if (!entry) {
      failures.push(`breaking: ${change.message}\n    id: ${change.id}`);
      continue;
    }
    const carrier = parseVersion(entry.version);
    if (carrier.major <= released.major) {
      failures.push(`accepted break ${change.id} names ${entry.version}, but a break needs a new major version (after ${released.text}).`);
    } else if (carrier.text !== current.text) {
      failures.push(`accepted break ${change.id} is carried by ${entry.version}, but the contract says info.version ${current.text}.`);
    }
  }
  for (const entry of pending) {
    if (!changes.some((change) => change.kind === 'breaking' && change.id === entry.id)) {
      failures.push(`accepted break "${entry.id}" (${entry.version}) matches no change any more: remove it from accepted-breaks.yaml.`);
    }
  }

  for (const change of changes.filter((change) => change.kind === 'deprecated')) {
    const operation = findOperation(options.current, change.id.replace(/^operation-deprecated /, ''));
    const name = change.message.replace(/;.*/, '');
    const deprecatedAt = dateOf(operation?.['x-deprecated-at']);
    const sunset = dateOf(operation?.['x-sunset']);
    if (!deprecatedAt || !sunset) {
      failures.push(`${name}: a deprecated operation needs x-deprecated-at and x-sunset, dates (YYYY-MM-DD).`);
    } else if (sunset.getTime() - deprecatedAt.getTime() < MIN_DEPRECATION_NOTICE_DAYS * 86_400_000) {
      failures.push(`${name}: x-sunset ${String(operation!['x-sunset'])} is less than six months after x-deprecated-at.`);
    }
  }
  return { released, current, changes, failures };
}

function dateOf(value: unknown): Date | undefined {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const date = new Date(`${value}T00:00:00Z`);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function findOperation(document: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const [method, ...rest] = key.split(' ');
  const paths = document.paths as Record<string, Record<string, Record<string, unknown>>>;
  return paths[rest.join(' ')]?.[method!.toLowerCase()];
}

/** The changes as changelog lines (Markdown), grouped by kind. */
export function changelogSection(version: string, date: string | undefined, changes: ContractChange[]): string {
  const groups: Array<[string, ContractChange['kind']]> = [
    ['Breaking', 'breaking'],
    ['Deprecated', 'deprecated'],
    ['Added', 'added'],
    ['Changed', 'changed'],
  ];
  const lines = [date ? `## ${version} (${date})` : `## ${version}`, ''];
  for (const [title, kind] of groups) {
    const items = changes.filter((change) => change.kind === kind);
    if (items.length === 0) continue;
    lines.push(`### ${title}`, '', ...items.map((change) => `- ${change.message}`), '');
  }
  if (changes.length === 0) lines.push('No change of the contract.', '');
  return lines.join('\n');
}
