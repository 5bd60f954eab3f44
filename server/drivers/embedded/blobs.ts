import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * The files holding object bytes, under DATA_DIR/objects: `tmp/<blob>` while a write streams in,
 * `blobs/<first two characters>/<blob>` once complete. A file is written, synced, then renamed
 * into place (and its folder synced): a crash leaves either no file in `blobs/` or a complete one,
 * and never a visible version without its bytes (the version's row is committed after).
 */
export class BlobFiles {
  readonly root: string;
  private readonly made = new Set<string>();

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
   * Streams `source` through `transforms` into the blob's file and makes it durable. Returns the
   * bytes written. On any failure the temporary file is removed.
   */
  async write(blob: string, source: Readable, transforms: Transform[]): Promise<number> {
    const tmp = this.tmpPath(blob);
    // `flush`: the file is synced before it is closed, so the pipeline ends with its bytes on disk.
    const out = createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true, highWaterMark: 1024 * 1024 });
    try {
      await pipeline([source, ...transforms, out]);
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
    return out.bytesWritten;
  }

  /** Moves a written blob into place, durably. */
  async publish(blob: string): Promise<void> {
    const folder = path.dirname(this.finalPath(blob));
    if (!this.made.has(folder)) {
      await mkdir(folder, { recursive: true });
      this.made.add(folder);
    }
    await rename(this.tmpPath(blob), this.finalPath(blob));
    const dir = await open(folder, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  /** Reads bytes [start, end] (inclusive) of a blob. */
  read(blob: string, start: number, end: number): Readable {
    return createReadStream(this.finalPath(blob), { start, end, highWaterMark: 1024 * 1024 });
  }

  /** Removes a blob wherever it is (temporary or in place). Nothing to do when it is gone. */
  async remove(blob: string): Promise<void> {
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
