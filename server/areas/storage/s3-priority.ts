// The S3 endpoint yields the CPU to the API. On one machine the two share the cores: a large
// upload's hashing and writes and many small PUTs' commits took turns with API requests as equals,
// and beside them the API's p99 grew five to twenty times (the bench's "API beside S3"). Linux
// gives each thread a nice value of its own, and a thread or process starts with its creator's:
// the S3 thread lowers its own at start, so that the hashing threads it starts run lower too, and
// it lowers the PostgreSQL backends of its own connections when the database is the embedded one,
// whose backends are processes of this machine that this server started. With cores to spare, a
// nice value changes nothing: S3 runs as fast as before. Where the kernel groups a session's or a
// service's processes (an autogroup, a systemd unit's cgroup), nice values rank threads within
// that group: S3 then yields to its own server's API, not to everything else on the machine.
import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';

/** The kernel's id of the calling thread, or undefined where there is none to read (not Linux). */
function currentThreadId(): number | undefined {
  try {
    // A link to "<pid>/task/<tid>".
    const id = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(id) && id > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Lowers the calling thread's priority by `steps` nice values (19 at most), for it and for the
 * threads it starts from then on. Returns its nice value now, or undefined where a thread's own
 * cannot be set (not Linux, or refused).
 */
export function lowerThreadPriority(steps: number): number | undefined {
  const thread = currentThreadId();
  if (thread === undefined) return undefined;
  try {
    const nice = Math.min(19, os.getPriority(thread) + steps);
    os.setPriority(thread, nice);
    return nice;
  } catch {
    return undefined;
  }
}

/**
 * Gives a PostgreSQL backend of this machine the nice value `nice`, unless it already runs that
 * low. The process is checked to be a postgres one first: a backend that ended may have left its
 * id to another process. Returns whether the backend runs at `nice` or lower.
 */
export function lowerBackendPriority(pid: number, nice: number): boolean {
  try {
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') return false;
    if (os.getPriority(pid) < nice) os.setPriority(pid, nice);
    return true;
  } catch {
    return false;
  }
}
