import { randomUUID } from 'node:crypto';
import { LISTENER_APPLICATION, type DatabaseListener } from '../db/listener.ts';
import type { Principal } from '../core/principal.ts';

/** Announced by the database when an API key or a member changes (migration 0800_credential_changes.sql). */
export const CREDENTIALS_CHANNEL = 'credentials_changed';
/** On CREDENTIALS_CHANNEL: a process that changed a key asks every cache to say it has forgotten it. */
const SYNC_PREFIX = 'sync:';
/** Where each cache answers a sync, with its token. */
const SYNCED_CHANNEL = 'credentials_synced';

/** Entries kept at most; past that the oldest go (a key in use comes back with one query). */
const MAX_ENTRIES = 10_000;
/** The longest a change waits for every cache's answer (a stuck process must not hold a request). */
const SYNC_WAIT_MS = 1_000;

interface SyncWaiter {
  /** Answers needed: the processes' LISTEN connections counted when the sync was sent (this one's included). */
  expected: number;
  answers: number;
  readonly done: () => void;
}

interface Entry {
  /** A Principal for an API key; what a section keeps for its own kind of credential. */
  value: unknown;
  /** When the key expires (ms since the epoch); undefined when it does not. */
  expiresAt: number | undefined;
}

/** The cache's entries for one other kind of credential (S3 access keys), under names of their own. */
export interface CacheSection<V> {
  get(name: string): V | undefined;
  ticket(): number;
  put(ticket: number, name: string, value: V): void;
  /** A change this process committed: see CredentialCache.changed. */
  changed(): Promise<void>;
}

/**
 * API keys already looked up, by the hash of their secret, so that a request need not ask the
 * database who is calling. A revocation (or any change of a key or a member) is effective at
 * once in every process: the database announces it with NOTIFY when it commits, and each
 * process empties its cache on the announcement. The cache is used only while the process's
 * listener (db/listener.ts) LISTENs: before the first LISTEN and after a lost connection, every
 * request asks the database, and the cache starts empty again once listening resumes
 * (announcements may have been missed).
 * Other kinds of credential announced on the same channel (S3 access keys) keep entries in a
 * `section` of it, forgotten with the rest on every announcement.
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private readonly listener: DatabaseListener;
  /** Bumped by every invalidation: a lookup begun before one does not fill the cache. */
  private generation = 0;
  private listening = false;
  /** Changes made by this process waiting for every cache's answer, by the token of their sync. */
  private readonly syncWaiters = new Map<string, SyncWaiter>();

  /** Subscribes to the process's listener: the cache works while that listens (once it is started). */
  constructor(listener: DatabaseListener) {
    this.listener = listener;
    listener.subscribe({
      channels: [CREDENTIALS_CHANNEL, SYNCED_CHANNEL],
      notified: (channel, payload) => this.notified(channel, payload),
      listening: () => {
        // Whatever changed while nobody listened was not announced.
        this.invalidate();
        this.listening = true;
      },
      lost: () => this.disable(),
    });
  }

  /** The cached principal of a key hash, if any and still unexpired. */
  get(hash: string, now = Date.now()): Principal | undefined {
    return this.lookup(`key:${hash}`, now) as Principal | undefined;
  }

  private lookup(name: string, now: number): unknown {
    if (!this.listening) return undefined;
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= now) {
      this.entries.delete(name);
      return undefined;
    }
    return entry.value;
  }

  /** Entries of another kind of credential, named apart from the API keys' (`kind` prefixes their names). */
  section<V>(kind: string): CacheSection<V> {
    return {
      get: (name) => this.lookup(`${kind}:${name}`, Date.now()) as V | undefined,
      ticket: () => this.ticket(),
      put: (ticket, name, value) => this.store(ticket, `${kind}:${name}`, value, undefined),
      changed: () => this.changed(),
    };
  }

  /** A token for `put`: the cache state before the database was asked. */
  ticket(): number {
    return this.generation;
  }

  /**
   * Keeps a principal the database just confirmed, unless an invalidation came in since `ticket`
   * was taken (the answer may predate the change) or the cache is not listening.
   */
  put(ticket: number, hash: string, principal: Principal, expiresAt: Date | null): void {
    this.store(ticket, `key:${hash}`, principal, expiresAt?.getTime());
  }

  private store(ticket: number, name: string, value: unknown, expiresAt: number | undefined): void {
    if (!this.listening || ticket !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(name, { value, expiresAt });
  }

  /**
   * A change this process just committed: forgets everything at once, then waits (at most
   * SYNC_WAIT_MS) until every process's cache has said it forgot everything too, so that once the
   * change is answered no process serves the old key. The database's own announcement is not
   * enough: it reaches each process when that process's connection and event loop get to it, and
   * a request that came in meanwhile was served from the cache (a CI run saw it). So the change
   * counts the processes' LISTEN connections, then announces a sync on the same channel; each
   * cache answers it once read, and it is read after the change's announcement (one session reads
   * notifications in commit order). A process whose connection is lost caches nothing until it
   * listens again, and one that started listening later started with an empty cache.
   */
  async changed(): Promise<void> {
    this.invalidate();
    if (!this.listening) return;
    const token = randomUUID();
    await new Promise<void>((resolve) => {
      const waiter: SyncWaiter = {
        expected: Infinity,
        answers: 0,
        done: () => {
          clearTimeout(timer);
          this.syncWaiters.delete(token);
          resolve();
        },
      };
      const timer = setTimeout(waiter.done, SYNC_WAIT_MS);
      this.syncWaiters.set(token, waiter);
      this.listener
        .query<{ listeners: number }>(
          'SELECT count(*)::int AS listeners FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
          [LISTENER_APPLICATION],
        )
        .then(({ rows }) => {
          waiter.expected = rows[0]!.listeners;
          if (waiter.answers >= waiter.expected) waiter.done();
          return this.listener.query('SELECT pg_notify($1, $2)', [CREDENTIALS_CHANNEL, `${SYNC_PREFIX}${token}`]);
        })
        // The connection is lost: disable() ends the wait, and nothing is cached until it is back.
        .catch(() => {});
    });
  }

  /** A cache's answer to a sync: the change that sent it is done once every cache has answered. */
  private answered(token: string): void {
    const waiter = this.syncWaiters.get(token);
    if (!waiter) return;
    waiter.answers++;
    if (waiter.answers >= waiter.expected) waiter.done();
  }

  /** Forgets everything (also when this process changed a key itself, before it waits for the other caches). */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  private disable(): void {
    this.listening = false;
    this.invalidate();
    // No answer comes on a lost connection; nothing is cached until it is back.
    for (const waiter of [...this.syncWaiters.values()]) waiter.done();
  }

  private notified(channel: string, payload: string): void {
    if (channel === SYNCED_CHANNEL) return this.answered(payload);
    this.invalidate();
    // Forgotten (above, at once): says so to the process that asked.
    if (payload.startsWith(SYNC_PREFIX))
      this.listener.query('SELECT pg_notify($1, $2)', [SYNCED_CHANNEL, payload.slice(SYNC_PREFIX.length)]).catch(() => {});
  }
}
