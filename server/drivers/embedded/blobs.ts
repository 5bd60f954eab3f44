import { randomUUID } from 'node:crypto';
import { close, constants, createReadStream, createWriteStream, fdatasync, open as openDescriptor } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { BufferPool } from './buffer-pool.ts';

const openFile = promisify(openDescriptor);
const datasyncFile = promisify(fdatasync);
const closeFile = promisify(close);

/** Bytes per write to a blob's file, and per read from it. */
const WRITE_CHUNK = 1024 * 1024;
/** Bytes per read of a blob sent to a client (two such buffers per read: one filling, one sending). */
const SEND_CHUNK = 256 * 1024;
/**
 * The buffers blobs are sent to clients through, reused from one read to the next. A buffer
 * allocated per read (as a file read stream does) is memory outside V8's heap that V8 counts as
 * old-generation allocation: at a few hundred MiB/s of reads it started a full collection every
 * few dozen milliseconds.
 */
const sendBuffers = new BufferPool(SEND_CHUNK, 16);
/** Bytes written between two early flushes of a large blob. */
const FLUSH_EVERY = 32 * 1024 * 1024;

/** Flushes a file's bytes (fdatasync: with the size, which reading them needs) or a folder's entries (fsync). */
async function synced(target: string, what: 'data' | 'all'): Promise<void> {
  const handle = await open(target, 'r');
  try {
    await (what === 'data' ? handle.datasync() : handle.sync());
  } finally {
    await handle.close();
  }
}

/** Resolves once `out` has taken `chunk` (its write callback); rejects should it close or fail first. */
function written(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const closed = () => reject(Object.assign(new Error('the client went away mid-body'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    if (out.destroyed || out.writableEnded) return closed();
    out.once('close', closed);
    out.write(chunk, (error) => {
      out.off('close', closed);
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * The files holding object bytes, under DATA_DIR/objects: `tmp/<blob>` while a write streams in,
 * `blobs/<first two characters>/<blob>` once complete. A file is written, renamed into place, then
 * its data and its folder are synced together; the version's row is committed only after both,
 * so no visible version ever lacks its bytes. A file in `blobs/` whose row never committed (a
 * crash between the rename and the commit) is named by its write's reservation, durable before
 * the rename (write-path.ts), and removed by the sweep with it. A small write whose reservation is
 * durable before its first byte is written straight into place (`write`'s `inPlace`): no row
 * names it before its bytes and its name are synced either.
 */
export class BlobFiles {
  readonly root: string;
  private readonly made = new Set<string>();
  /** Blobs written in place and not yet published: their files' descriptors, open for the sync. */
  private readonly unsynced = new Map<string, number>();

  constructor(root: string) {
    this.root = root;
  }

  async init(): Promise<void> {
    await mkdir(path.join(this.root, 'tmp'), { recursive: true });
    await mkdir(path.join(this.root, 'blobs'), { recursive: true });
  }

  static newName(): string {
    return randomUUID();
  }

  tmpPath(blob: string): string {
    return path.join(this.root, 'tmp', blob);
  }

  finalPath(blob: string): string {
    return path.join(this.root, 'blobs', blob.slice(0, 2), blob);
  }

  /**
   * Streams `source` through `transforms` into the blob's temporary file (not yet synced: see
   * `publish`). Returns the bytes written. On any failure (or `signal` aborting it) the file is removed.
   *
   * `inPlace`: into its file in `blobs/` instead (no `signal`), for a write whose reservation
   * naming the blob is already durable (a crash from here on leaves a file the sweep finds by it)
   * and whose row will not commit before `publish` has synced it. The file is kept open for that
   * sync, so that a small write costs seven calls to the file system, where a temporary file, its
   * rename and the two syncs after it (each opening and closing what it syncs) cost ten.
   */
  async write(
    blob: string,
    source: Readable,
    transforms: Transform[],
    { inPlace = false, signal }: { inPlace?: boolean; signal?: AbortSignal } = {},
  ): Promise<number> {
    if (inPlace) return this.writeInPlace(blob, source, transforms);
    const file = this.tmpPath(blob);
    const out = createWriteStream(file, { flags: 'wx', mode: 0o600, highWaterMark: WRITE_CHUNK });
    // A large file's bytes are flushed as they come (one fdatasync in flight, every FLUSH_EVERY
    // bytes), so that the flush `publish` waits for finds little left to write.
    let fd: number | undefined;
    let flushedAt = 0;
    let flushing = false;
    out.on('open', (opened: number) => (fd = opened));
    out.on('drain', () => {
      if (flushing || fd === undefined || out.bytesWritten - flushedAt < FLUSH_EVERY) return;
      flushing = true;
      flushedAt = out.bytesWritten;
      fdatasync(fd, () => void (flushing = false));
    });
    try {
      await pipeline([source, ...transforms, out], signal ? { signal } : {});
    } catch (error) {
      // The file may still be opening (a write stopped at once): removed only once the stream
      // has closed, or the open would create it again after the removal.
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      await rm(file, { force: true });
      throw error;
    }
    return out.bytesWritten;
  }

  /**
   * Gives a new blob the bytes of `source`, an existing one, without writing them again: its
   * temporary file is another name of the same file (a hard link), to be published as a written
   * one is. A blob is never changed once published (a version that replaces it has a blob of its
   * own) and a name is removed without touching the other names of its file, so two versions can
   * share one file: a copy of an object whose bytes do not change (CopyObject) costs no bytes on
   * disk and no time per byte. Where the file system has no hard links, the file is copied
   * (a clone where it can).
   */
  async share(blob: string, source: string): Promise<void> {
    const from = this.finalPath(source);
    const to = this.tmpPath(blob);
    try {
      await link(from, to);
    } catch (error) {
      if (!['EPERM', 'EXDEV', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
      await copyFile(from, to, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
    }
  }

  /**
   * Moves a written blob into place (one written in place is there already) and makes it durable:
   * its bytes (fdatasync) and its name in the folder (fsync of the folder), the two at once rather
   * than one after the other. Only once the write's reservation is durable (a crash after the
   * rename must leave a trace of the file).
   */
  async publish(blob: string): Promise<void> {
    const placed = await this.placedPath(blob);
    const fd = this.unsynced.get(blob);
    this.unsynced.delete(blob);
    if (fd === undefined) await rename(this.tmpPath(blob), placed);
    const data = fd === undefined ? synced(placed, 'data') : datasyncFile(fd).finally(() => closeFile(fd));
    await Promise.all([data, synced(path.dirname(placed), 'all')]);
  }

  /** `write` in place: the file is left open, its descriptor kept for `publish` (or `remove`). */
  private async writeInPlace(blob: string, source: Readable, transforms: Transform[]): Promise<number> {
    const placed = await this.placedPath(blob);
    const fd = await openFile(placed, 'wx', 0o600);
    // Given a descriptor, not a FileHandle (whose close would wait for this stream to let it go).
    // Once every byte is written the stream leaves it open (no autoClose) and `pipeline` ends at
    // 'finish' (no close to wait for). A failure destroys the stream, which closes it then: closed
    // here too, the number could by then be another file's.
    const out = createWriteStream('', { fd, autoClose: false, emitClose: false, highWaterMark: WRITE_CHUNK });
    try {
      await pipeline([source, ...transforms, out]);
    } catch (error) {
      out.destroy();
      await rm(placed, { force: true });
      throw error;
    }
    this.unsynced.set(blob, fd);
    return out.bytesWritten;
  }

  /** The blob's path in `blobs/`, its folder made on first use. */
  private async placedPath(blob: string): Promise<string> {
    const placed = this.finalPath(blob);
    const folder = path.dirname(placed);
    if (!this.made.has(folder)) {
      await mkdir(folder, { recursive: true });
      this.made.add(folder);
    }
    return placed;
  }

  /** Reads bytes [start, end] (inclusive) of a blob. */
  read(blob: string, start: number, end: number): Readable {
    return createReadStream(this.finalPath(blob), { start, end, highWaterMark: WRITE_CHUNK });
  }

  /**
   * Writes bytes [start, end] (inclusive) of a blob to `out`, without ending it: one buffer is
   * read from the file while the other is being written, and each is used again once `out` has
   * taken its bytes (its write callback). `onSent` counts the bytes `out` took; `pace`, if given,
   * is awaited before each buffer goes out. Rejects, with ERR_STREAM_PREMATURE_CLOSE, should
   * `out` close first (a client gone).
   */
  async send(
    blob: string,
    start: number,
    end: number,
    out: Writable,
    onSent: (bytes: number) => void,
    pace?: (bytes: number) => Promise<void>,
  ): Promise<void> {
    if (end < start) return;
    const handle = await open(this.finalPath(blob), 'r');
    const buffers = [sendBuffers.take(), sendBuffers.take()] as const;
    let writing: Promise<void> = Promise.resolve();
    try {
      let position = start;
      for (let turn = 0; position <= end; turn ^= 1) {
        const buffer = buffers[turn]!;
        const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - position + 1), position);
        if (bytesRead === 0) throw new Error(`blob ${blob} ends before byte ${position}`);
        position += bytesRead;
        if (pace) await pace(bytesRead);
        // The other buffer's bytes are taken before this one's go out (and before it is read into again).
        await writing;
        writing = written(out, buffer.subarray(0, bytesRead)).then(() => onSent(bytesRead));
        // Awaited at the next turn; meanwhile a failure is not an unhandled rejection.
        writing.catch(() => {});
      }
      await writing;
    } finally {
      // A failed read leaves a write in flight: its buffer is not reused before it settles.
      await writing.catch(() => {});
      for (const buffer of buffers) sendBuffers.give(buffer);
      await handle.close();
    }
  }

  /** Removes a blob wherever it is (temporary or in place). Nothing to do when it is gone. */
  async remove(blob: string): Promise<void> {
    const fd = this.unsynced.get(blob);
    this.unsynced.delete(blob);
    if (fd !== undefined) await closeFile(fd).catch(() => {});
    await rm(this.tmpPath(blob), { force: true });
    await rm(this.finalPath(blob), { force: true });
  }

  /** Temporary files older than `olderThanMs`: writes that never finished (for the sweep). */
  async staleTemporaries(olderThanMs: number): Promise<string[]> {
    const names = await readdir(path.join(this.root, 'tmp')).catch(() => [] as string[]);
    const stale: string[] = [];
    for (const name of names) {
      const info = await stat(this.tmpPath(name)).catch(() => undefined);
      if (info && Date.now() - info.mtimeMs > olderThanMs) stale.push(name);
    }
    return stale;
  }
}
