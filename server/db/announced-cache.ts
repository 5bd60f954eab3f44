import { randomUUID } from 'node:crypto';
import { LISTENER_APPLICATION, type DatabaseListener } from './listener.ts';

/** The channels of one announced cache: where the database announces a change, and where caches answer a sync. */
export interface AnnouncedChannels {
  /** Announced (by a trigger) when what the cache holds changes; also carries this process's syncs. */
  changed: string;
  /** Where each cache answers a sync, with its token. */
  synced: string;
}

/** On the `changed` channel: a process that changed something asks every cache to say it has forgotten. */
const SYNC_PREFIX = 'sync:';
/** Entries kept at most; past that the oldest go (an entry in use comes back with one query). */
const MAX_ENTRIES = 10_000;
/** Tags whose latest announcement is remembered, so that a read begun before it is not kept; a ticket older than what is remembered keeps nothing. */
const REMEMBERED_ANNOUNCEMENTS = 10_000;
/** The longest a change waits for every cache's answer (a stuck process must not hold a request). */
const SYNC_WAIT_MS = 1_000;

/** A cache's entries for one kind of credential, under names of their own (see CredentialCache.section). */
export interface CacheSection<V> {
  get(name: string): V | undefined;
  ticket(): number;
  /** `tags`: what the entry depends on; an announcement of any of them forgets it (see AnnouncedCache.store). */
  put(ticket: number, name: string, value: V, tags?: readonly string[]): void;
  /** A change this process committed (of what `tags` name): see AnnouncedCache.changed. */
  changed(tags?: readonly string[]): Promise<void>;
}

/** The entries of `cache` for one kind of value, named apart from the others' (`kind` prefixes their names). */
export function sectionOf<V>(cache: AnnouncedCache<unknown>, kind: string): CacheSection<V> {
  return {
    get: (name) => cache.lookup(`${kind}:${name}`) as V | undefined,
    ticket: () => cache.ticket(),
    put: (ticket, name, value, tags) => cache.store(ticket, `${kind}:${name}`, value, undefined, tags),
    changed: (tags) => cache.changed(tags),
  };
}

interface SyncWaiter {
  /** Answers needed: the processes' LISTEN connections counted when the sync was sent (this one's included). */
  expected: number;
  answers: number;
  readonly done: () => void;
}

interface Entry<V> {
  value: V;
  /** When the entry stops being valid (ms since the epoch); undefined when it does not. */
  expiresAt: number | undefined;
  tags: readonly string[];
}

/**
 * What an announcement's payload says changed, as the tags of the entries to forget; undefined
 * when it does not say (then everything is forgotten).
 */
export type AnnouncedTags = (payload: string) => readonly string[] | undefined;

/**
 * What a process read from the database and keeps, so that a request need not ask again, while
 * every change is seen at once in every process: the database announces a change (NOTIFY, from
 * a trigger) when it commits, and each process forgets what the change touched on the
 * announcement. An entry is kept with the tags of what it depends on (a key's entry: that key and
 * its member); an announcement whose payload names a tag (`tagsOf`) forgets the entries with that
 * tag and nothing else, so that one tenant's change costs the others no lookup; one that names
 * nothing forgets everything. The cache is used only while the process's listener (listener.ts)
 * LISTENs: before the first LISTEN and after a lost connection, every read asks the database, and
 * the cache starts empty again once listening resumes (announcements may have been missed).
 *
 * A read that fills the cache takes a `ticket` before asking the database: its answer is kept
 * only if nothing it depends on was announced meanwhile (the answer may predate the change).
 */
export class AnnouncedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  /** The names of the entries with each tag. */
  private readonly tagged = new Map<string, Set<string>>();
  private readonly listener: DatabaseListener;
  private readonly channels: AnnouncedChannels;
  private readonly tagsOf: AnnouncedTags;
  /** Announcements (and invalidations) seen: the ticket of a lookup is the count when it began. */
  private announcements = 0;
  /** The announcement that forgot everything last: a lookup begun before it keeps nothing. */
  private forgotAllAt = 0;
  /** The latest announcement of each recently announced tag (oldest first). */
  private readonly announcedAt = new Map<string, number>();
  /** Announcements up to this one are no longer in `announcedAt`: a lookup begun before keeps nothing. */
  private forgottenBefore = 0;
  private listening = false;
  /** Changes made by this process waiting for every cache's answer, by the token of their sync. */
  private readonly syncWaiters = new Map<string, SyncWaiter>();

  /**
   * Subscribes to the process's listener: the cache works while that listens (once it is started).
   * `tagsOf`: what a payload of the `changed` channel names; by default nothing (every announcement forgets everything).
   */
  constructor(listener: DatabaseListener, channels: AnnouncedChannels, tagsOf: AnnouncedTags = () => undefined) {
    this.listener = listener;
    this.channels = channels;
    this.tagsOf = tagsOf;
    listener.subscribe({
      channels: [channels.changed, channels.synced],
      notified: (channel, payload) => this.notified(channel, payload),
      listening: () => {
        // Whatever changed while nobody listened was not announced.
        this.invalidate();
        this.listening = true;
      },
      lost: () => this.disable(),
    });
  }

  /** The entry of `name`, if any, still valid and the cache listening. */
  lookup(name: string, now = Date.now()): V | undefined {
    if (!this.listening) return undefined;
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= now) {
      this.remove(name);
      return undefined;
    }
    return entry.value;
  }

  /** A token for `store`: the cache state before the database was asked. */
  ticket(): number {
    return this.announcements;
  }

  /**
   * Keeps what the database just answered, unless the cache is not listening or something it
   * depends on was announced since `ticket` was taken: everything (`invalidate`), or one of its
   * `tags`. `expiresAt`: when it stops being valid on its own.
   */
  store(ticket: number, name: string, value: V, expiresAt?: number, tags: readonly string[] = []): void {
    if (!this.listening || ticket < this.forgotAllAt || ticket < this.forgottenBefore) return;
    if (tags.some((tag) => (this.announcedAt.get(tag) ?? 0) > ticket)) return;
    this.remove(name);
    if (this.entries.size >= MAX_ENTRIES) this.remove(this.entries.keys().next().value!);
    this.entries.set(name, { value, expiresAt, tags });
    for (const tag of tags) {
      const names = this.tagged.get(tag);
      if (names) names.add(name);
      else this.tagged.set(tag, new Set([name]));
    }
  }

  /** Forgets the entries with any of these tags (a change of what they name was announced, or made here). */
  forget(tags: readonly string[]): void {
    for (const tag of tags) {
      this.announcements++;
      this.announcedAt.delete(tag);
      this.announcedAt.set(tag, this.announcements);
      if (this.announcedAt.size > REMEMBERED_ANNOUNCEMENTS) {
        const [oldest, at] = this.announcedAt.entries().next().value!;
        this.announcedAt.delete(oldest);
        this.forgottenBefore = at;
      }
      for (const name of [...(this.tagged.get(tag) ?? [])]) this.remove(name);
    }
    this.forgotten(tags);
  }

  /** Called with the tags of every targeted forgetting (after the entries went): for what a subclass keeps beside them. */
  protected forgotten(_tags: readonly string[]): void {}

  private remove(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.entries.delete(name);
    for (const tag of entry.tags) {
      const names = this.tagged.get(tag);
      names?.delete(name);
      if (names?.size === 0) this.tagged.delete(tag);
    }
  }

  /**
   * A change this process just committed: forgets what it touched (`tags`; everything when
   * undefined) at once, then waits (at most SYNC_WAIT_MS) until every process's cache has said it
   * read the change's announcement too, so that once the change is answered no process serves the
   * old entry. The database's own announcement is not
   * enough: it reaches each process when that process's connection and event loop get to it, and
   * a request that came in meanwhile was served from the cache (a CI run saw it). So the change
   * counts the processes' LISTEN connections, then announces a sync on the same channel; each
   * cache answers it once read, and it is read after the change's announcement (one session reads
   * notifications in commit order). A process whose connection is lost caches nothing until it
   * listens again, and one that started listening later started with an empty cache.
   */
  async changed(tags?: readonly string[]): Promise<void> {
    if (tags) this.forget(tags);
    else this.invalidate();
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
          return this.listener.query('SELECT pg_notify($1, $2)', [this.channels.changed, `${SYNC_PREFIX}${token}`]);
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

  /** Forgets everything (also when this process changed something itself, before it waits for the other caches). */
  invalidate(): void {
    this.forgotAllAt = ++this.announcements;
    this.entries.clear();
    this.tagged.clear();
  }

  private disable(): void {
    this.listening = false;
    this.invalidate();
    // No answer comes on a lost connection; nothing is cached until it is back.
    for (const waiter of [...this.syncWaiters.values()]) waiter.done();
  }

  private notified(channel: string, payload: string): void {
    if (channel === this.channels.synced) return this.answered(payload);
    // A sync comes after the announcement of the change that sent it (one session reads
    // notifications in commit order): that was read, and what it named forgotten. Says so.
    if (payload.startsWith(SYNC_PREFIX)) {
      this.listener.query('SELECT pg_notify($1, $2)', [this.channels.synced, payload.slice(SYNC_PREFIX.length)]).catch(() => {});
      return;
    }
    const tags = this.tagsOf(payload);
    if (tags) this.forget(tags);
    else this.invalidate();
  }
}
