import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../logging.ts';

/** The application_name of the platform's LISTEN connections, one per server process (and per S3 thread). */
export const LISTENER_APPLICATION = 'cloud-platform-listener';

/** Where a process asks every listener to say it has read what was announced before (see `sync`). */
const SYNC_CHANNEL = 'listeners_sync';
/** Where each listener answers a sync, with its token. */
const SYNCED_CHANNEL = 'listeners_synced';
/** The longest a sync waits for every listener's answer (a stuck process must not hold a request). */
const SYNC_WAIT_MS = 1_000;

interface SyncWaiter {
  /** Answers needed: the listeners counted when the sync was sent (this one's included). */
  expected: number;
  answers: number;
  readonly done: () => void;
}

/** The longest pause between tries to listen again while the database cannot be reached. */
const MAX_RETRY_MS = 5_000;
/** The pause between tries to take a lock another session holds. */
const LOCK_RETRY_MS = 1_000;

/** What waits for the database's announcements (NOTIFY) on some channels. */
export interface Subscriber {
  readonly channels: readonly string[];
  /** An announcement on one of its channels. */
  notified(channel: string, payload: string): void;
  /** The connection listens (again): whatever was announced while nobody listened was missed. */
  listening(): void;
  /** The connection is lost (or the listener stops): nothing is announced until `listening` again. */
  lost(): void;
}

/**
 * The process's own connection: it LISTENs for everything the process waits for (queued work,
 * credential changes) and holds the session's advisory locks that say the process is alive (the
 * object store's instance lock), and it is opened again, LISTENs and locks again, when it is lost
 * (the database restarted, the network cut). It is outside the pool, which it would otherwise
 * hold a slot of for good. One per process rather than one per use: each is a PostgreSQL backend,
 * 10 to 15 MiB resident while it waits.
 */
export class DatabaseListener {
  private readonly subscribers: Subscriber[] = [];
  /** Session advisory locks (namespace, key) held while connected. */
  private readonly locks: Array<[number, number]> = [];
  private readonly connection: pg.ClientConfig;
  private readonly log: Pick<Logger, 'info' | 'warn'>;
  private client: pg.Client | undefined;
  private isListening = false;
  private stopping = false;
  private loop: Promise<void> | undefined;
  /** Resolved once the first try to listen is made (the same promise for every `start`). */
  private started: Promise<void> | undefined;
  private wakeRetry: () => void = () => {};
  private endWait: () => void = () => {};
  /** Whether this listener answers syncs: those counted by one (LISTENER_APPLICATION's), and only they. */
  private readonly answersSyncs: boolean;
  /** Syncs this process sent, waiting for every listener's answer, by their token. */
  private readonly syncWaiters = new Map<string, SyncWaiter>();

  constructor(connection: pg.ClientConfig, log: Pick<Logger, 'info' | 'warn'>, applicationName = LISTENER_APPLICATION) {
    this.connection = { ...connection, application_name: applicationName };
    this.log = log;
    this.answersSyncs = applicationName === LISTENER_APPLICATION;
  }

  /** Adds a subscriber; only before `start`, which LISTENs on every subscriber's channels at once. */
  subscribe(subscriber: Subscriber): void {
    if (this.loop) throw new Error('subscribe before the listener starts');
    this.subscribers.push(subscriber);
  }

  /** Holds a session advisory lock whenever connected; only before `start`. */
  holdLock(namespace: number, key: number): void {
    if (this.loop) throw new Error('hold locks before the listener starts');
    this.locks.push([namespace, key]);
  }

  /** Starts listening; resolves once the first try has been made (subscribers hear whether it worked). */
  start(): Promise<void> {
    return (this.started ??= new Promise((resolve) => (this.loop = this.listenLoop(resolve))));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeRetry();
    this.endWait();
    // A connection still being opened (or a statement waiting on a frozen server) ends too.
    this.client?.end().catch(() => {});
    await this.loop;
  }

  /** Runs a statement on the listening connection (notifications it sends are ordered with what it reads). */
  async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const client = this.client;
    if (!client || !this.isListening) throw new Error('the listener is not connected');
    return client.query<R>(text, values);
  }

  /**
   * Waits (at most `timeoutMs`) until every listener of the platform, in every process and thread
   * on this database, has read what was announced before the call: a process that committed a
   * change calls it so that, once the change is answered, no cache anywhere serves what it held
   * before (db/announced-cache.ts). A NOTIFY reaches each listener when that listener's
   * connection and event loop get to it, and a request that came in meanwhile was served from
   * the cache (a CI run saw it). So the sync counts the listeners, then announces a token; each
   * listener answers it once read, and a session reads notifications in commit order, whatever
   * their channel, so every announcement committed before was read (and handed to its
   * subscribers) first. One channel for every cache: a listener whose process keeps no cache of
   * the kind answers too, where a sync per kind of cache waited out its time for each listener
   * that did not listen for that kind (a billing change answered after a full second while the S3
   * thread's listener was counted and never answered). Resolves at once when not listening: a
   * listener that is not caches nothing, and one that listens later starts empty.
   */
  async sync(timeoutMs = SYNC_WAIT_MS): Promise<void> {
    if (!this.isListening) return;
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
      const timer = setTimeout(waiter.done, timeoutMs);
      this.syncWaiters.set(token, waiter);
      this.query<{ listeners: number }>(
        'SELECT count(*)::int AS listeners FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
        [LISTENER_APPLICATION],
      )
        .then(({ rows }) => {
          waiter.expected = rows[0]!.listeners;
          if (waiter.answers >= waiter.expected) waiter.done();
          return this.query('SELECT pg_notify($1, $2)', [SYNC_CHANNEL, token]);
        })
        // The connection is lost: its end ends the wait (nothing is cached until it is back).
        .catch(() => {});
    });
  }

  /** A listener's answer to a sync: the sync is done once every listener has answered. */
  private answered(token: string): void {
    const waiter = this.syncWaiters.get(token);
    if (!waiter) return;
    waiter.answers++;
    if (waiter.answers >= waiter.expected) waiter.done();
  }

  private async listenLoop(firstTryMade: () => void): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let connected = false;
      const lost = await this.listenUntilLost(() => {
        if (failures > 0) this.log.info('listening for the database announcements again');
        failures = 0;
        connected = true;
        firstTryMade();
      });
      firstTryMade();
      if (this.stopping) return;
      if (failures++ === 0) {
        const what = connected ? 'the database listener lost its connection' : 'cannot listen for the database announcements';
        this.log.warn({ reason: lost?.message }, `${what}; polling until it is back`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(MAX_RETRY_MS, 100 * 2 ** Math.min(failures, 6)));
        this.wakeRetry = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /**
   * Takes the session locks on this connection, trying again each second for one that another
   * session holds: the one this process held before its connection was cut, when the database
   * has not yet noticed it is gone (it still says this process is alive meanwhile), or a sweep
   * taking it for a moment. Never waits on the connection itself, which serves the subscribers.
   */
  private async takeLocks(client: pg.Client): Promise<void> {
    const pending = [...this.locks];
    while (pending.length > 0 && this.client === client && this.isListening) {
      const [namespace, key] = pending[0]!;
      const taken = await client
        .query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS held', [namespace, key])
        .then(({ rows }) => rows[0]!.held)
        // The connection is lost: the next one takes them.
        .catch(() => undefined);
      if (taken === undefined) return;
      if (taken) pending.shift();
      else await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
  }

  /** LISTENs until the connection is lost (the error is returned) or the listener stops. */
  private async listenUntilLost(listening: () => void): Promise<Error | undefined> {
    const client = new pg.Client(this.connection);
    this.client = client;
    let lost: Error | undefined;
    let ended = () => {};
    // Without an error listener, a lost connection would be an uncaught 'error' event.
    client.on('error', (error) => ((lost = error), ended()));
    client.on('end', () => ((lost ??= new Error('the connection ended')), ended()));
    client.on('notification', ({ channel, payload }) => {
      if (channel === SYNCED_CHANNEL) return this.answered(payload ?? '');
      // Everything announced before the sync was read, and handed to its subscribers: says so.
      if (channel === SYNC_CHANNEL) return void client.query('SELECT pg_notify($1, $2)', [SYNCED_CHANNEL, payload ?? '']).catch(() => {});
      for (const subscriber of this.subscribers) {
        if (subscriber.channels.includes(channel)) subscriber.notified(channel, payload ?? '');
      }
    });
    try {
      await client.connect();
      const channels = new Set(this.subscribers.flatMap((subscriber) => subscriber.channels));
      if (this.answersSyncs) channels.add(SYNC_CHANNEL);
      // Its own syncs' answers, whatever its name.
      channels.add(SYNCED_CHANNEL);
      await client.query([...channels].map((channel) => `LISTEN ${channel}`).join('; '));
      if (this.stopping) return undefined;
      this.isListening = true;
      for (const subscriber of this.subscribers) subscriber.listening();
      listening();
      void this.takeLocks(client);
      await new Promise<void>((resolve) => {
        ended = resolve;
        this.endWait = resolve;
        if (lost || this.stopping) resolve();
      });
      return lost;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    } finally {
      const wasListening = this.isListening;
      this.isListening = false;
      this.client = undefined;
      if (wasListening) for (const subscriber of this.subscribers) subscriber.lost();
      // No answer comes on a lost connection; nothing is cached until it is back.
      for (const waiter of [...this.syncWaiters.values()]) waiter.done();
      // Not awaited: against a frozen server, ending waits for an answer that does not come.
      client.end().catch(() => {});
    }
  }
}
