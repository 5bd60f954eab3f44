// Flow control of long-lived connections (server/core/flow-control.ts), on a clock the test moves:
// input within its rate flows; past it the connection is not read until the rate allows more; a
// peer that keeps sending far past it is a flooder; an organization's connections share its rate;
// output a peer does not read is bounded.
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { FlowControl, SharedRates, TokenBucket, type FlowLimitReached } from '../../../server/core/flow-control.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const now = () => Date.now();

/** A connection as flow control sees it, recording what was done to it. */
function fakeConnection() {
  const connection = {
    reading: true,
    buffered: 0,
    limits: [] as FlowLimitReached[],
    pauseInput: () => void (connection.reading = false),
    resumeInput: () => void (connection.reading = true),
    bufferedOutput: () => connection.buffered,
  };
  return connection;
}

function controlled(shared: SharedRates | undefined = undefined, org = 'org-a') {
  const connection = fakeConnection();
  const flow = new FlowControl(
    connection,
    { input: { messagesPerSecond: 100, bytesPerSecond: 1_000 }, floodMessages: 200, maxBufferedOutput: 4_096 },
    (why) => connection.limits.push(why),
    shared ? [shared.acquire(org)] : [],
    now,
  );
  return { connection, flow };
}

describe('a token bucket', () => {
  test('holds its burst, lends past it, and refills at its rate', () => {
    const bucket = new TokenBucket(10, 20, now);
    expect(bucket.take(20)).toBe(0);
    expect(bucket.take(5)).toBe(-5);
    expect(bucket.msUntilClear()).toBe(500);
    vi.advanceTimersByTime(500);
    expect(bucket.msUntilClear()).toBe(0);
    vi.advanceTimersByTime(60_000);
    // Never more than its burst, however long it rested.
    expect(bucket.take(20)).toBe(0);
    // Debt is capped: past excess is not held against it for long.
    expect(bucket.take(1_000)).toBe(-40);
  });
});

describe('input', () => {
  test('within its rate is read without a pause', () => {
    const { connection, flow } = controlled();
    for (let message = 0; message < 1_000; message++) {
      expect(flow.received(1)).toBe(true);
      expect(connection.reading).toBe(true);
      vi.advanceTimersByTime(20); // 50 a second, under 100
    }
    expect(connection.limits).toEqual([]);
  });

  test('past its rate is not read until the rate allows more', () => {
    const { connection, flow } = controlled();
    // The burst (twice the rate) goes through; the next message stops reading.
    for (let message = 0; message < 200; message++) flow.received(1);
    expect(connection.reading).toBe(true);
    flow.received(1);
    expect(connection.reading).toBe(false);
    vi.advanceTimersByTime(20);
    expect(connection.reading).toBe(true);
    // Bytes count too: 3,000 bytes against 1,000 a second (2,000 of burst) wait a second.
    vi.advanceTimersByTime(60_000);
    flow.received(3_000);
    expect(connection.reading).toBe(false);
    vi.advanceTimersByTime(999);
    expect(connection.reading).toBe(false);
    vi.advanceTimersByTime(1);
    expect(connection.reading).toBe(true);
    expect(connection.limits).toEqual([]);
  });

  test('a peer that keeps sending far past its rate (messages already read when reading stopped) floods, and is done with', () => {
    const { connection, flow } = controlled();
    const accepted = Array.from({ length: 1_000 }, () => flow.received(1)).filter(Boolean).length;
    // The burst, then the allowance past it; the message beyond is the flood.
    expect(accepted).toBe(400);
    expect(connection.limits).toEqual(['input_flood']);
    vi.advanceTimersByTime(60_000);
    expect(flow.received(1)).toBe(false);
    expect(connection.limits).toEqual(['input_flood']);
  });

  test("an organization's connections share its rate: past it each is paused, none is taken for a flooder", () => {
    const organizations = new SharedRates({ messagesPerSecond: 50, bytesPerSecond: 100_000 }, now);
    const first = controlled(organizations);
    const second = controlled(organizations);
    const third = controlled(organizations, 'org-b');
    for (let message = 0; message < 60; message++) {
      first.flow.received(1);
      second.flow.received(1);
    }
    // 120 messages against the organization's 100 of burst: both wait, within their own rates.
    expect(first.connection.reading).toBe(false);
    expect(second.connection.reading).toBe(false);
    expect([...first.connection.limits, ...second.connection.limits]).toEqual([]);
    // Another organization's connection is not held back.
    third.flow.received(1);
    expect(third.connection.reading).toBe(true);
    vi.advanceTimersByTime(400);
    expect(first.connection.reading).toBe(true);
    expect(second.connection.reading).toBe(true);
  });

  test('a hold (nothing to read into yet) outlasts the rate, and ends with release', () => {
    const { connection, flow } = controlled();
    flow.hold();
    expect(connection.reading).toBe(false);
    for (let message = 0; message < 201; message++) flow.received(1);
    vi.advanceTimersByTime(1_000);
    expect(connection.reading).toBe(false);
    flow.release();
    expect(connection.reading).toBe(true);
  });
});

describe('output', () => {
  test('waiting for a peer past the bound means the peer does not read', () => {
    const { connection, flow } = controlled();
    connection.buffered = 4_096;
    flow.wrote();
    expect(connection.limits).toEqual([]);
    connection.buffered = 4_097;
    flow.wrote();
    flow.wrote();
    expect(connection.limits).toEqual(['output_not_read']);
  });
});
