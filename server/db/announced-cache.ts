import type { DatabaseListener } from './listener.ts';

/** Entries kept at most; past that the oldest go (an entry in use comes back with one query). */
const MAX_ENTRIES = 10_000;
/** Tags whose latest announcement is remembered, so that a read begun before it is not kept; a ticket older than what is remembered keeps nothing. */
const REMEMBERED_ANNOUNCEMENTS = 10_000;
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

  /**
   * Subscribes to the process's listener: the cache works while that listens (once it is started).
   * `channel`: where the database announces a change of what the cache holds (a trigger's NOTIFY).
   * `tagsOf`: what a payload of that channel names; by default nothing (every announcement forgets everything).
   */
  constructor(listener: DatabaseListener, channel: string, tagsOf: AnnouncedTags = () => undefined) {
    this.listener = listener;
    this.tagsOf = tagsOf;
    listener.subscribe({
      channels: [channel],
      notified: (_channel, payload) => this.notified(payload),
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
   * undefined) at once, then waits until every listener, in every process, has read the change's
   * announcement too (DatabaseListener.sync), so that once the change is answered no process
   * serves the old entry.
   */
  async changed(tags?: readonly string[]): Promise<void> {
    if (tags) this.forget(tags);
    else this.invalidate();
    if (this.listening) await this.listener.sync();
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
  }

  private notified(payload: string): void {
    const tags = this.tagsOf(payload);
    if (tags) this.forget(tags);
    else this.invalidate();
  }
}
