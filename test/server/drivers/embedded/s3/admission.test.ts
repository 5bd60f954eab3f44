// The S3 endpoint's admission (drivers/embedded/s3/admission.ts): while the API is answering
// requests, S3 requests start at a pace and wait their turn in order; once it is quiet they all
// start; past five seconds' worth of waiting, SlowDown.
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { admission, MAX_HOLD_MS, MAX_WAIT_SECONDS } from '../../../../../server/drivers/embedded/s3/admission.ts';
import type { S3Error } from '../../../../../server/drivers/embedded/s3/errors.ts';

let apiBusy = false;
let started: string[] = [];
let refused: Array<{ name: string; error: S3Error }> = [];

beforeEach(() => {
  vi.useFakeTimers();
  apiBusy = false;
  started = [];
  refused = [];
});
afterEach(() => {
  vi.useRealTimers();
});

/** An admission at `busyRate` (and `busyBytesPerSecond`) on the fake clock, and a way to send it a named request. */
function pacedAt(busyRate: number, busyBytesPerSecond = 0) {
  const gate = admission({ apiBusy: () => apiBusy, busyRate, busyBytesPerSecond, now: () => Date.now() });
  const send = (name: string, res = { destroyed: false }) =>
    gate.admit(
      res as ServerResponse,
      () => started.push(name),
      (error) => refused.push({ name, error }),
    );
  return { gate, send };
}

describe('S3 admission', () => {
  test('while the API is quiet, every request starts as it comes', () => {
    const { gate, send } = pacedAt(10);
    for (let index = 0; index < 100; index++) send(`r${index}`);
    expect(started).toHaveLength(100);
    expect(gate.waiting).toBe(0);
  });

  test('while the API is busy, requests start at its pace, in the order they came', () => {
    apiBusy = true;
    const { gate, send } = pacedAt(10);
    for (const name of ['a', 'b', 'c', 'd']) send(name);
    expect(started).toEqual(['a']);
    expect(gate.waiting).toBe(3);
    // 10/s: one start every 100 ms (the first two 50 ms apart, a moment's starts saved up).
    vi.advanceTimersByTime(40);
    expect(started).toEqual(['a']);
    vi.advanceTimersByTime(20);
    expect(started).toEqual(['a', 'b']);
    vi.advanceTimersByTime(80);
    expect(started).toEqual(['a', 'b']);
    vi.advanceTimersByTime(20);
    expect(started).toEqual(['a', 'b', 'c']);
    vi.advanceTimersByTime(100);
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    expect(gate.waiting).toBe(0);
    expect(refused).toEqual([]);
  });

  test('once the API is quiet, every waiting request starts', () => {
    apiBusy = true;
    const { gate, send } = pacedAt(1);
    for (const name of ['a', 'b', 'c', 'd', 'e']) send(name);
    expect(started).toEqual(['a']);
    apiBusy = false;
    vi.advanceTimersByTime(10);
    expect(started).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(gate.waiting).toBe(0);
  });

  test('a client that went away while it waited is not started', () => {
    apiBusy = true;
    const { gate, send } = pacedAt(10);
    const gone = { destroyed: false };
    send('a');
    send('b', gone);
    send('c');
    gone.destroyed = true;
    vi.advanceTimersByTime(100);
    expect(started).toEqual(['a', 'c']);
    expect(gate.waiting).toBe(0);
  });

  test(`a request that would wait more than ${MAX_WAIT_SECONDS} s is refused with SlowDown and Retry-After`, () => {
    apiBusy = true;
    const { gate, send } = pacedAt(2);
    // One starts; 2/s for 5 s is 10 waiting; the next two are refused.
    for (let index = 0; index < 13; index++) send(`r${index}`);
    expect(started).toEqual(['r0']);
    expect(gate.waiting).toBe(2 * MAX_WAIT_SECONDS);
    expect(refused.map(({ name }) => name)).toEqual(['r11', 'r12']);
    const [{ error }] = refused as [(typeof refused)[number]];
    expect([error.code, error.status, error.headers['Retry-After']]).toEqual(['SlowDown', 503, '1']);
    // Those waiting still start, in order.
    vi.advanceTimersByTime(5_000);
    expect(started).toEqual(Array.from({ length: 11 }, (_, index) => `r${index}`));
  });

  test('after a pause in the pace, no more than a moment of starts go at once', () => {
    apiBusy = true;
    const { send } = pacedAt(100);
    send('first');
    vi.advanceTimersByTime(10_000);
    // Ten seconds of no S3 requests at 100/s would be 1,000 starts saved up: only 50 ms' worth go.
    for (let index = 0; index < 20; index++) send(`r${index}`);
    expect(started).toEqual(['first', 'r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
  });

  test("while the API is busy, uploads' bytes pass at the pace, all uploads together", async () => {
    apiBusy = true;
    const { gate } = pacedAt(10, 1_000);
    const passed: string[] = [];
    const [first, second] = [gate.bodyPace(), gate.bodyPace()];
    first.on('data', (chunk: Buffer) => passed.push(`first ${chunk.length}`));
    second.on('data', (chunk: Buffer) => passed.push(`second ${chunk.length}`));
    // 1,000 bytes a second: 100 bytes take 100 ms of the pace (a moment of it saved up).
    first.write(Buffer.alloc(100));
    second.write(Buffer.alloc(100));
    first.write(Buffer.alloc(100));
    await vi.advanceTimersByTimeAsync(1);
    expect(passed).toEqual(['first 100']);
    await vi.advanceTimersByTimeAsync(50);
    expect(passed).toEqual(['first 100', 'second 100']);
    await vi.advanceTimersByTimeAsync(90);
    expect(passed).toEqual(['first 100', 'second 100']);
    await vi.advanceTimersByTimeAsync(10);
    expect(passed).toEqual(['first 100', 'second 100', 'first 100']);
    // Once the API is quiet, bytes pass as they come.
    apiBusy = false;
    second.write(Buffer.alloc(100_000));
    await vi.advanceTimersByTimeAsync(0);
    expect(passed.at(-1)).toBe('second 100000');
  });

  test("while the API is busy, downloads share the uploads' pace; once it is quiet, they go at once", async () => {
    apiBusy = true;
    const { gate } = pacedAt(10, 1_000);
    const passed: string[] = [];
    const upload = gate.bodyPace();
    upload.on('data', (chunk: Buffer) => passed.push(`upload ${chunk.length}`));
    const send = (bytes: number) => void gate.sendPace(bytes).then(() => passed.push(`download ${bytes}`));
    // 1,000 bytes a second, the upload's 100 bytes first: the download's 100 wait their 100 ms.
    upload.write(Buffer.alloc(100));
    send(100);
    send(100);
    await vi.advanceTimersByTimeAsync(1);
    expect(passed).toEqual(['upload 100']);
    await vi.advanceTimersByTimeAsync(50);
    expect(passed).toEqual(['upload 100', 'download 100']);
    await vi.advanceTimersByTimeAsync(99);
    expect(passed).toEqual(['upload 100', 'download 100', 'download 100']);
    apiBusy = false;
    send(1_000_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(passed.at(-1)).toBe('download 1000000');
  });

  test(`however many transfers share the pace, none is held more than ${MAX_HOLD_MS} ms at a time`, async () => {
    apiBusy = true;
    const { gate } = pacedAt(10, 1_000);
    // Fifty downloads' pieces of a second's worth each: in turn, the last would wait 49 s, which
    // clients take for a dead connection.
    let sent = 0;
    for (let index = 0; index < 50; index++) void gate.sendPace(1_000).then(() => sent++);
    let uploaded = 0;
    const upload = gate.bodyPace();
    upload.on('data', () => uploaded++);
    upload.write(Buffer.alloc(1_000));
    // The first at once, the second at its turn (a second less a moment saved up), every other
    // one held the longest a piece is held, not its turn in line.
    await vi.advanceTimersByTimeAsync(1);
    expect({ sent, uploaded }).toEqual({ sent: 1, uploaded: 0 });
    await vi.advanceTimersByTimeAsync(MAX_HOLD_MS - 2);
    expect({ sent, uploaded }).toEqual({ sent: 2, uploaded: 0 });
    await vi.advanceTimersByTimeAsync(1);
    expect({ sent, uploaded }).toEqual({ sent: 50, uploaded: 1 });
  });

  test('each pace can be turned off on its own (0)', async () => {
    apiBusy = true;
    const { gate, send } = pacedAt(0, 1_000);
    for (let index = 0; index < 50; index++) send(`r${index}`);
    expect(started).toHaveLength(50);
    const passed: number[] = [];
    const pace = gate.bodyPace();
    pace.on('data', (chunk: Buffer) => passed.push(chunk.length));
    pace.write(Buffer.alloc(500));
    pace.write(Buffer.alloc(500));
    await vi.advanceTimersByTimeAsync(1);
    expect(passed).toEqual([500]);
    const unpaced = pacedAt(10, 0).gate.bodyPace();
    const through: number[] = [];
    unpaced.on('data', (chunk: Buffer) => through.push(chunk.length));
    for (let index = 0; index < 5; index++) unpaced.write(Buffer.alloc(1_000_000));
    await vi.advanceTimersByTimeAsync(0);
    expect(through).toHaveLength(5);
    const sent: number[] = [];
    for (let index = 0; index < 5; index++)
      void pacedAt(10, 0)
        .gate.sendPace(1_000_000)
        .then(() => sent.push(index));
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toHaveLength(5);
  });
});
