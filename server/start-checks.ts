import { createHash } from 'node:crypto';
import { realpathSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Config } from './config.ts';

/**
 * What `npm start` checks before it makes anything: that no other server uses its DATA_DIR, and
 * that the ports it will listen on are free. A start refused by either leaves nothing behind (no
 * DATA_DIR, no initialised PostgreSQL), and says what to change.
 */

/** Another server holds DATA_DIR: who it is, as it says itself. */
export class DataDirInUseError extends Error {
  constructor(dataDir: string, holder: DataDirHolder | undefined) {
    const who = holder ? `pid ${holder.pid}, ${holder.url ? `listening on ${holder.url}` : 'still starting'}` : 'it did not say who it is';
    super(
      `DATA_DIR ${dataDir} is in use by another server (${who}): one server runs on a DATA_DIR at a time, as its embedded PostgreSQL is that server's; stop the other one first, or give this one another DATA_DIR.`,
    );
    this.name = 'DataDirInUseError';
  }
}

/** What the server holding a DATA_DIR says of itself to whoever asks. */
export interface DataDirHolder {
  pid: number;
  /** Where its API listens; undefined while it starts. */
  url: string | undefined;
}

export interface DataDirLock {
  /** The server now listens here: said to whoever asks from now on. */
  listening(url: string): void;
  release(): Promise<void>;
}

/**
 * Takes DATA_DIR for this server. The lock is a listening local socket named after the directory
 * (its real path): the kernel allows one listener per name and ends it with the process, however
 * the process ends, so a lock is never left behind by a crash. On Linux the socket is abstract
 * (no file); elsewhere it is a file in the temporary directory, taken over when nobody answers
 * on it. Whoever finds it taken connects to it and is told the holder's pid and address.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const address = lockAddress(dataDir);
  const holder: DataDirHolder = { pid: process.pid, url: undefined };
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.end(`${JSON.stringify(holder)}\n`);
  });
  server.on('error', () => {});
  for (let attempt = 0; ; attempt++) {
    const taken = await listenOn(server, address);
    if (taken === undefined) break;
    const other = await askHolder(address);
    // A socket file nobody answers on: left by a process that ended (the file outlives it). Once.
    if (other === 'nobody' && !address.startsWith('\0') && attempt === 0) {
      unlinkSync(address);
      continue;
    }
    throw new DataDirInUseError(dataDir, other === 'nobody' ? undefined : other);
  }
  server.unref();
  return {
    listening(url) {
      holder.url = url;
    },
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function lockAddress(dataDir: string): string {
  const name = `cloud-platform-data-dir-${createHash('sha256').update(realPathOf(dataDir)).digest('hex').slice(0, 32)}`;
  return process.platform === 'linux' ? `\0${name}` : path.join(tmpdir(), `${name}.sock`);
}

/** The directory's real path; for one not made yet, its real parent's path with the rest. */
function realPathOf(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  try {
    return realpathSync(resolved);
  } catch {
    const parent = path.dirname(resolved);
    return parent === resolved ? resolved : path.join(realPathOf(parent), path.basename(resolved));
  }
}

/** Listens; undefined when it does, the error when the address is taken. */
function listenOn(server: Server, address: string): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const failed = (error: NodeJS.ErrnoException) => resolve(error);
    server.once('error', failed);
    server.listen(address, () => {
      server.removeListener('error', failed);
      resolve(undefined);
    });
  });
}

/** Asks the lock's holder who it is. */
function askHolder(address: string): Promise<DataDirHolder | 'nobody' | undefined> {
  return new Promise((resolve) => {
    const socket = connect(address);
    let text = '';
    const timer = setTimeout(() => socket.destroy(), 2_000);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code === 'ECONNREFUSED' || error.code === 'ENOENT' ? 'nobody' : undefined);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(text) as DataDirHolder);
      } catch {
        resolve(undefined);
      }
    });
  });
}

/**
 * Checks that the ports this configuration listens on (the API's, the S3 endpoint's and the
 * metrics', unless 0: any free one) are free now, by listening on each for a moment. A taken one
 * is the error `listen` gives (EADDRINUSE), for the start to say which port to change.
 */
export async function assertPortsFree(config: Pick<Config, 'host' | 'port' | 'metricsPort' | 'drivers' | 's3'>): Promise<void> {
  const ports = [config.port, config.drivers.objectStore === 'embedded' ? config.s3.port : 0, config.metricsPort ?? 0];
  for (const port of new Set(ports.filter((port) => port !== 0))) {
    const probe = createServer();
    await new Promise<void>((resolve, reject) => {
      probe.once('error', (error: NodeJS.ErrnoException) => reject(Object.assign(error, { port })));
      probe.listen(port, config.host, () => probe.close(() => resolve()));
    });
  }
}
