import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes one of the files the server keeps beside its database (the secret store's key, the
 * embedded PostgreSQL's settings, bootstrap.json) so that a crash, or the machine losing power,
 * leaves it as it was or as it was written, never empty or cut short: the bytes go to a file of
 * their own, which is synced, then take the name, and the folder is synced. A new file written in
 * place and not synced can be found empty after a power loss (the file system may commit its name
 * before its bytes): for the secret store's key, that would lose every secret sealed with it.
 *
 * `exclusive`: the file is written only if it does not exist (two processes starting together keep
 * the first one's), and whole (a hard link to the synced draft, where creating the file would show
 * its name before its bytes). Answers whether this call wrote it.
 */
export function writeFileDurably(file: string, content: string, { mode = 0o600, exclusive = false } = {}): boolean {
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeSynced(draft, content, mode);
  let written = true;
  try {
    if (exclusive) written = linkedUnlessTaken(draft, file, content, mode);
    else renameSync(draft, file);
  } finally {
    rmSync(draft, { force: true });
  }
  syncDirectory(path.dirname(file));
  return written;
}

/** Makes a folder's entries (a file created, renamed or removed in it) durable. */
export function syncDirectory(dir: string): void {
  // Windows gives no handle on a folder to sync; NTFS journals its renames itself.
  if (process.platform === 'win32') return;
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Creates `file` (which must not exist) with `content`, synced. */
function writeSynced(file: string, content: string, mode: number): void {
  const fd = openSync(file, 'wx', mode);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Gives `file` the draft's bytes unless it exists; false when it did. */
function linkedUnlessTaken(draft: string, file: string, content: string, mode: number): boolean {
  try {
    linkSync(draft, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // A file system without hard links: the file is created and synced in place (a crash between
    // the two can leave it short there, as nothing else could prevent).
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    try {
      writeSynced(file, content, mode);
      return true;
    } catch (createError) {
      if ((createError as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw createError;
    }
  }
}
