import type { Queryable } from '../../../db/pool.ts';
import { prepared, runPrepared } from '../../../db/statements.ts';
import type { VmOut } from './vm-policy.ts';
import { toVmOut, VM_ANSWER_COLUMNS, type VmAnswerRow, type VmVersion } from './vm-rows.ts';

interface Entry {
  version: string;
  answer: VmOut;
  readAt: number;
}

/** Answers kept at most; past that the oldest go (read again with the next list that shows them). */
const MAX_ANSWERS = 5_000;
/**
 * An answer is trusted this long at most. `xmin` is a 32-bit transaction id that wraps around
 * after four billion transactions; no database gets through that many in ten minutes, so within
 * that time an unchanged version is an unchanged row.
 */
const MAX_AGE_MS = 10 * 60_000;

const VMS_BY_ID = prepared(
  'vm_answers_by_id',
  `SELECT ${VM_ANSWER_COLUMNS}, xmin::text AS version FROM vms WHERE org_id = $1 AND id = ANY($2::uuid[])`,
);

const LIVE_VM_VERSION = prepared(
  'vm_live_version',
  'SELECT id, xmin::text AS version FROM vms WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL',
);

/**
 * The answers of the instances this process read last, by the version of their rows: a list
 * (or a read of one instance) reads only each instance's id and version, and the rows of those whose
 * answer is not already here. Most pages of a dashboard's list are the instances it showed a moment
 * ago, unchanged, and their hundred rows of 26 columns were most of a list's CPU (reading, parsing
 * and mapping them); a client polling one instance reads the same answer until the instance changes.
 * Nothing needs announcing: a changed row has a new version, whichever process changed it. The
 * answers are frozen, since every list that shows an instance shares its answer.
 */
export class VmAnswers {
  private readonly entries = new Map<string, Entry>();
  /**
   * The reads of missing answers under way, by organization and ids. The reconciler's pass gives
   * every instance a new version at once: each list in flight then missed all of its page and
   * read the same hundred rows (about 30 reads of a page of 100 after each pass, at 32 clients),
   * and every client waited behind all of them. A list that misses what a read under way is
   * reading waits for that read instead; see `of` for when it may.
   */
  private readonly reading = new Map<string, Promise<Entry[]>>();

  /** The answer of one live instance of the organization; undefined when it has none. */
  async one(db: Queryable, orgId: string, vmId: string): Promise<VmOut | undefined> {
    const { rows } = await runPrepared<VmVersion>(db, LIVE_VM_VERSION, [orgId, vmId]);
    return rows.length === 0 ? undefined : (await this.of(db, orgId, rows))[0];
  }

  /** The answers of `listed`, in its order; an instance gone meanwhile is left out. */
  async of(db: Queryable, orgId: string, listed: readonly VmVersion[], now = Date.now()): Promise<VmOut[]> {
    // Taken before any wait: another request may push an answer out of the cache meanwhile.
    const answers = new Map<string, VmOut>();
    const missing: string[] = [];
    for (const { id, version } of listed) {
      const entry = this.entries.get(id);
      if (entry !== undefined && entry.version === version && now - entry.readAt < MAX_AGE_MS) answers.set(id, entry.answer);
      else missing.push(id);
    }
    if (missing.length > 0) {
      let stillMissing = missing;
      const underWay = this.reading.get(readKey(orgId, missing));
      if (underWay) {
        // A read begun before this list may have read an older row than the list named (a change
        // committed in between, perhaps this client's own): its answers are taken only where their
        // version is the one listed, and the others are read again (all of them if it failed).
        const listedVersion = new Map(listed.map(({ id, version }) => [id, version]));
        for (const entry of await underWay.catch(() => [])) {
          if (entry.version === listedVersion.get(entry.answer.id)) answers.set(entry.answer.id, entry.answer);
        }
        stillMissing = missing.filter((id) => !answers.has(id));
      }
      if (stillMissing.length > 0) {
        // Read after the list: possibly a newer version than it named, and the newer the better.
        for (const entry of await this.read(db, orgId, stillMissing, now)) answers.set(entry.answer.id, entry.answer);
      }
    }
    const page: VmOut[] = [];
    for (const { id } of listed) {
      const answer = answers.get(id);
      if (answer !== undefined) page.push(answer);
    }
    return page;
  }

  /** Reads the answers of `ids` and keeps them; others that miss the same ids meanwhile wait for this read. */
  private read(db: Queryable, orgId: string, ids: string[], now: number): Promise<Entry[]> {
    const key = readKey(orgId, ids);
    const reading = runPrepared<VmAnswerRow & { version: string }>(db, VMS_BY_ID, [orgId, ids])
      .then(({ rows }) =>
        rows.map((row) => {
          const entry = { version: row.version, answer: deepFreeze(toVmOut(row)), readAt: now };
          this.keep(row.id, entry);
          return entry;
        }),
      )
      .finally(() => {
        if (this.reading.get(key) === reading) this.reading.delete(key);
      });
    if (!this.reading.has(key)) this.reading.set(key, reading);
    return reading;
  }

  private keep(id: string, entry: Entry): void {
    this.entries.delete(id);
    if (this.entries.size >= MAX_ANSWERS) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(id, entry);
  }
}

const readKey = (orgId: string, ids: readonly string[]) => `${orgId} ${ids.join(',')}`;

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
