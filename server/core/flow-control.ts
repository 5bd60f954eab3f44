import { performance } from 'node:perf_hooks';
import type { InputRate } from '../config.ts';

/**
 * Flow control for long-lived connections (the console's WebSocket today; event streams and
 * webhook deliveries next): no tenant's connection may cost the others anything. Input is
 * rate-limited per connection and per organization, and past its rate the connection is not read
 * (its peer's writes wait in TCP, at no cost here); a peer that keeps sending far past its rate is
 * a flooder, to be closed. Output waits in a bounded buffer: a peer that does not read it fills the
 * buffer and is closed. The caller closes, with a reason that says which limit was reached.
 */

/** Milliseconds on a clock that never goes back. */
export type Now = () => number;
const monotonic: Now = () => performance.now();

/**
 * A token bucket: `perSecond` tokens a second, at most `burst` held. Taking more than it holds
 * leaves it in debt (a negative level), which refills like the rest: a sender that kept going
 * waits longer. Debt is capped at twice `burst`, so that past excess is not held against a
 * connection (or an organization) for long, while a flood (debt past `burst`) still shows.
 */
export class TokenBucket {
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly now: Now;
  private level: number;
  private at: number;

  constructor(perSecond: number, burst: number, now: Now = monotonic) {
    this.perSecond = perSecond;
    this.burst = burst;
    this.now = now;
    this.level = burst;
    this.at = now();
  }

  /** Takes `amount`; returns the level left (negative: in debt). */
  take(amount: number): number {
    this.refill();
    this.level = Math.max(-2 * this.burst, this.level - amount);
    return this.level;
  }

  /** How long until the level is back to zero (0 when it is not in debt). */
  msUntilClear(): number {
    this.refill();
    return this.level >= 0 ? 0 : Math.ceil((-this.level * 1000) / this.perSecond);
  }

  private refill(): void {
    const now = this.now();
    this.level = Math.min(this.burst, this.level + ((now - this.at) * this.perSecond) / 1000);
    this.at = now;
  }
}

/** The buckets of one rate (a burst of twice the rate is allowed). */
export interface RateBuckets {
  messages: TokenBucket;
  bytes: TokenBucket;
}

export function rateBuckets(rate: InputRate, now: Now = monotonic): RateBuckets {
  return {
    messages: new TokenBucket(rate.messagesPerSecond, 2 * rate.messagesPerSecond, now),
    bytes: new TokenBucket(rate.bytesPerSecond, 2 * rate.bytesPerSecond, now),
  };
}

/**
 * Buckets shared by every connection of one key (an organization), made with the first
 * connection and dropped with the last.
 */
export class SharedRates {
  private readonly rate: InputRate;
  private readonly now: Now;
  private readonly shared = new Map<string, RateBuckets & { users: number }>();

  constructor(rate: InputRate, now: Now = monotonic) {
    this.rate = rate;
    this.now = now;
  }

  acquire(key: string): RateBuckets {
    let buckets = this.shared.get(key);
    if (!buckets) this.shared.set(key, (buckets = { ...rateBuckets(this.rate, this.now), users: 0 }));
    buckets.users++;
    return buckets;
  }

  release(key: string): void {
    const buckets = this.shared.get(key);
    if (buckets && --buckets.users === 0) this.shared.delete(key);
  }
}

/** The two ends of a connection, as flow control works them. */
export interface FlowControlledConnection {
  /** Stops reading the peer: what it sends waits in TCP (its own buffers fill, then its writes wait). */
  pauseInput(): void;
  resumeInput(): void;
  /** Bytes written to the peer and not yet taken by it (in this process's buffers). */
  bufferedOutput(): number;
}

export interface FlowLimits {
  /** The connection's own input rate; undefined: the connection takes no input. */
  input?: InputRate;
  /** Messages past the connection's own allowance (burst included) at which its peer is taken for a flooder. */
  floodMessages?: number;
  /** Bytes of output that may wait for the peer; past that, the peer is taken for one that does not read. */
  maxBufferedOutput: number;
}

/** Why flow control gave up on a connection. */
export type FlowLimitReached = 'input_flood' | 'output_not_read';

/**
 * Flow control of one connection. `received` for every message that comes in (before handling
 * it), `wrote` after every write; `limitReached` is called once, when the peer floods or does not
 * read, for the caller to close the connection with a reason that says so. `shared`: buckets
 * other connections draw from too (the organization's), which pause this one when spent but never
 * close it.
 */
export class FlowControl {
  private readonly connection: FlowControlledConnection;
  private readonly limits: FlowLimits;
  private readonly own: RateBuckets | undefined;
  private readonly shared: RateBuckets[];
  private readonly limitReached: (why: FlowLimitReached) => void;
  private resumeTimer: NodeJS.Timeout | undefined;
  /** Reading is held for another reason than the rate (the caller's `hold`). */
  private held = false;
  private stopped = false;

  constructor(
    connection: FlowControlledConnection,
    limits: FlowLimits,
    limitReached: (why: FlowLimitReached) => void,
    shared: RateBuckets[] = [],
    now: Now = monotonic,
  ) {
    this.connection = connection;
    this.limits = limits;
    this.own = limits.input ? rateBuckets(limits.input, now) : undefined;
    this.shared = shared;
    this.limitReached = limitReached;
  }

  /**
   * A message of `bytes` came in; false when the connection is done with (the message is to be
   * dropped). Past a rate, reading stops until the rate allows more.
   */
  received(bytes: number): boolean {
    if (this.stopped) return false;
    if (!this.own) return true;
    const messagesLeft = this.own.messages.take(1);
    this.own.bytes.take(bytes);
    for (const buckets of this.shared) {
      buckets.messages.take(1);
      buckets.bytes.take(bytes);
    }
    // Messages already read when reading stopped still come in: a peer that keeps that many
    // coming past its allowance is not typing or pasting, it floods.
    if (this.limits.floodMessages !== undefined && messagesLeft < -this.limits.floodMessages) {
      this.reach('input_flood');
      return false;
    }
    this.pauseWhileOverRate();
    return true;
  }

  /** Something was written to the peer: too much of it waiting means the peer does not read. */
  wrote(): void {
    if (!this.stopped && this.connection.bufferedOutput() > this.limits.maxBufferedOutput) this.reach('output_not_read');
  }

  /** Stops reading for a reason of the caller's (until `release`), whatever the rate allows. */
  hold(): void {
    this.held = true;
    this.connection.pauseInput();
  }

  release(): void {
    this.held = false;
    if (!this.stopped && this.resumeTimer === undefined) this.connection.resumeInput();
  }

  /** The connection ends: no more timers, no more verdicts. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.resumeTimer);
    this.resumeTimer = undefined;
  }

  private pauseWhileOverRate(): void {
    if (this.resumeTimer !== undefined) return;
    const waitMs = Math.max(
      ...[this.own!, ...this.shared].flatMap((buckets) => [buckets.messages.msUntilClear(), buckets.bytes.msUntilClear()]),
    );
    if (waitMs === 0) return;
    this.connection.pauseInput();
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      if (this.stopped) return;
      // Others of the organization may have spent the shared allowance meanwhile: wait again if so.
      const stillOver = Math.max(...this.shared.flatMap((buckets) => [buckets.messages.msUntilClear(), buckets.bytes.msUntilClear()]), 0);
      if (stillOver > 0) return this.pauseWhileOverRate();
      if (!this.held) this.connection.resumeInput();
    }, waitMs);
  }

  private reach(why: FlowLimitReached): void {
    if (this.stopped) return;
    this.stop();
    this.limitReached(why);
  }
}
