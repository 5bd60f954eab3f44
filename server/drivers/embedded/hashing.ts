import { createHash, type Hash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Transform, type TransformCallback } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { crc32 } from 'node:zlib';

/**
 * The digests of an upload's bytes that have a native implementation: MD5 (the ETag), SHA-256
 * (a signed payload's hash, or the checksum), SHA-1 and CRC32 (checksums). Each is computed in
 * one pass over the bytes, however many checks need it.
 */
export const NATIVE_DIGESTS = ['md5', 'sha256', 'sha1', 'crc32'] as const;
export type NativeDigest = (typeof NATIVE_DIGESTS)[number];

export interface Hashing {
  /** Passes the bytes on unchanged; they are hashed on the side. */
  transform: Transform;
  /** Once the transform has ended: each digest, raw (CRC32 as 4 bytes, big endian). */
  result(): Promise<Map<NativeDigest, Buffer>>;
}

/**
 * Below this, hashing stays on the request's thread (a worker's round trip costs more than
 * hashing a small body); from it on, a worker thread hashes while the request's thread goes on
 * reading the socket and writing the file. MD5 alone runs at a few hundred MiB/s: on the
 * request's thread it was what bounded a large upload.
 */
export const OFF_THREAD_FROM_BYTES = 256 * 1024;

/**
 * Bytes gathered before they are handed to the worker: fewer, larger messages, yet small enough
 * that a body of a few MiB is hashed while it arrives rather than all at its end.
 */
const BATCH_BYTES = 256 * 1024;
/** Bytes handed to the worker and not yet hashed, beyond which the upload waits for it (memory stays bounded). */
const MAX_IN_FLIGHT_BYTES = 8 * 1024 * 1024;

/** Hashes the bytes that pass through: on the request's thread for small bodies, in a worker for larger ones. */
export function hashing(algorithms: Iterable<NativeDigest>, size: number): Hashing {
  const wanted = [...new Set(algorithms)];
  return size < OFF_THREAD_FROM_BYTES ? inlineHashing(wanted) : workerHashing(wanted);
}

type Running = { update(chunk: Uint8Array): void; digest(): Buffer };

function running(algorithm: NativeDigest): Running {
  if (algorithm === 'crc32') {
    let value = 0;
    return {
      update: (chunk) => void (value = crc32(chunk, value)),
      digest: () => {
        const bytes = Buffer.alloc(4);
        bytes.writeUInt32BE(value >>> 0);
        return bytes;
      },
    };
  }
  const hash: Hash = createHash(algorithm);
  return { update: (chunk) => void hash.update(chunk), digest: () => hash.digest() };
}

function inlineHashing(algorithms: NativeDigest[]): Hashing {
  const states = algorithms.map((algorithm) => [algorithm, running(algorithm)] as const);
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      for (const [, state] of states) state.update(chunk);
      callback(null, chunk);
    },
  });
  return { transform, result: () => Promise.resolve(new Map(states.map(([algorithm, state]) => [algorithm, state.digest()]))) };
}

// The worker's code, plain JavaScript: it runs wherever the server runs (Node 20 through tsx,
// Node 22.18+ stripping types), without a loader. Jobs are uploads; an update names a shared
// batch buffer (sent along the first time this worker sees it) and how many of its bytes to hash,
// and is acknowledged, so that the sender can use the buffer again.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { crc32 } = require('node:zlib');
const jobs = new Map();
const batches = new Map();
parentPort.on('message', (message) => {
  if (message.op === 'start') {
    jobs.set(message.job, message.algorithms.map((algorithm) =>
      algorithm === 'crc32' ? { algorithm, crc: 0 } : { algorithm, hash: createHash(algorithm) }));
  } else if (message.op === 'update') {
    if (message.shared) batches.set(message.batch, message.shared);
    const job = jobs.get(message.job);
    const data = new Uint8Array(batches.get(message.batch), 0, message.length);
    if (job) for (const state of job) state.hash ? state.hash.update(data) : (state.crc = crc32(data, state.crc));
    parentPort.postMessage({ job: message.job, ack: message.batch });
  } else if (message.op === 'end') {
    const job = jobs.get(message.job) ?? [];
    jobs.delete(message.job);
    const digests = {};
    for (const state of job) {
      if (state.hash) digests[state.algorithm] = state.hash.digest();
      else { const bytes = Buffer.alloc(4); bytes.writeUInt32BE(state.crc >>> 0); digests[state.algorithm] = bytes; }
    }
    parentPort.postMessage({ job: message.job, digests });
  } else if (message.op === 'drop') {
    jobs.delete(message.job);
  } else if (message.op === 'forget') {
    batches.delete(message.batch);
  }
});
`;

/**
 * The buffers uploads hand their bytes to the hashing workers in: shared with the workers (never
 * copied again, never transferred), each used again once a worker has hashed it. A fresh buffer
 * per batch (transferred to the worker) was memory outside V8's heap, which V8 counts as
 * old-generation allocation, in the process and again in the worker: with the buffers the HTTP
 * parser allocates for the body itself, it doubled how often a stream of uploads made V8 run a
 * full collection. Up to `KEEP_BATCHES` are kept between uses; beyond those (many uploads at once)
 * a batch is allocated and, once hashed, dropped, and the workers that held it forget it.
 */
class Batches {
  private readonly buffers = new Map<number, SharedArrayBuffer>();
  private readonly free: number[] = [];
  private nextId = 0;

  take(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    const id = this.nextId++;
    this.buffers.set(id, new SharedArrayBuffer(BATCH_BYTES));
    return id;
  }

  /** Takes a hashed batch back; returns false when it is not kept (its holders should forget it). */
  give(batch: number): boolean {
    if (this.free.length < KEEP_BATCHES) {
      this.free.push(batch);
      return true;
    }
    this.buffers.delete(batch);
    return false;
  }

  bytes(batch: number): Uint8Array {
    return new Uint8Array(this.buffers.get(batch)!);
  }

  shared(batch: number): SharedArrayBuffer {
    return this.buffers.get(batch)!;
  }
}

/** Batches kept between uses: those of one upload in flight at its limit. */
const KEEP_BATCHES = MAX_IN_FLIGHT_BYTES / BATCH_BYTES;
const batches = new Batches();

interface Job {
  onAck(bytes: number): void;
  onDigests(digests: Record<string, Uint8Array>): void;
  onFailure(error: Error): void;
}

/** A worker that has hashed nothing for this long ends (its isolate's memory is given back). */
const WORKER_IDLE_MS = 30_000;

interface Slot {
  worker: Worker;
  jobs: Map<number, Job>;
  idle: NodeJS.Timeout | undefined;
  /** Batches this worker has been sent (it keeps them), and those it has not acknowledged yet (with their length). */
  known: Set<number>;
  unacknowledged: Map<number, number>;
  /** The worker has died: what is handed to it goes back at once. */
  dead: boolean;
}

/** How an upload talks to its worker. */
interface Channel {
  post(message: object): void;
  /** Hands the first `length` bytes of a batch to the worker; the batch is given back once hashed. */
  hash(batch: number, length: number): void;
}

/**
 * A few hashing workers, shared by all uploads (each upload on one of them), started when first
 * needed and ended when idle.
 */
class HashingPool {
  private readonly workers = new Map<number, Slot>();
  private nextJob = 1;
  private nextWorker = 0;
  // One core is the request thread's: on 2 cores one worker (an isolate is tens of MiB resident).
  private readonly size = Math.max(1, Math.min(4, availableParallelism() - 1));

  /** Registers a job on a worker; returns how to send to it. */
  open(job: Job): Channel {
    const id = this.nextJob++;
    const index = this.nextWorker++ % this.size;
    const slot = this.slot(index);
    slot.jobs.set(id, job);
    clearTimeout(slot.idle);
    slot.idle = undefined;
    return {
      post: (message) => {
        slot.worker.postMessage({ job: id, ...message });
        if ((message as { op?: string }).op === 'drop') this.done(index, slot, id);
      },
      hash: (batch, length) => {
        if (slot.dead) {
          this.giveBack(batch);
          return;
        }
        const shared = slot.known.has(batch) ? undefined : batches.shared(batch);
        slot.known.add(batch);
        slot.unacknowledged.set(batch, length);
        slot.worker.postMessage({ job: id, op: 'update', batch, length, shared });
      },
    };
  }

  /** A hashed batch back to the pool; one not kept is forgotten by the workers holding it. */
  private giveBack(batch: number): void {
    if (batches.give(batch)) return;
    for (const slot of this.workers.values()) {
      if (slot.known.delete(batch)) slot.worker.postMessage({ op: 'forget', batch });
    }
  }

  /** A job is over: its worker ends once it has had nothing to do for a while. */
  private done(index: number, slot: Slot, id: number): void {
    slot.jobs.delete(id);
    if (slot.jobs.size > 0 || slot.idle) return;
    slot.idle = setTimeout(() => {
      // A batch still unacknowledged goes back when the worker's exit fails the slot (fail below).
      if (slot.jobs.size > 0 || this.workers.get(index) !== slot) return;
      this.workers.delete(index);
      void slot.worker.terminate();
    }, WORKER_IDLE_MS);
    slot.idle.unref();
  }

  private slot(index: number): Slot {
    const existing = this.workers.get(index);
    if (existing) return existing;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    // Idle workers do not keep the process alive.
    worker.unref();
    const slot: Slot = {
      worker,
      jobs: new Map<number, Job>(),
      idle: undefined,
      known: new Set(),
      unacknowledged: new Map(),
      dead: false,
    };
    worker.on('message', (message: { job: number; ack?: number; digests?: Record<string, Uint8Array> }) => {
      const job = slot.jobs.get(message.job);
      if (message.ack !== undefined) {
        // A hashed batch goes back to the pool whether or not its job is still there (a dropped one).
        const length = slot.unacknowledged.get(message.ack);
        if (length === undefined) return;
        slot.unacknowledged.delete(message.ack);
        this.giveBack(message.ack);
        job?.onAck(length);
      }
      if (!job || !message.digests) return;
      this.done(index, slot, message.job);
      job.onDigests(message.digests);
    });
    const fail = (error: Error) => {
      // A worker that died takes its jobs with it (their uploads fail); the next upload gets a new one.
      clearTimeout(slot.idle);
      slot.dead = true;
      for (const batch of slot.unacknowledged.keys()) this.giveBack(batch);
      slot.unacknowledged.clear();
      for (const job of slot.jobs.values()) job.onFailure(error);
      slot.jobs.clear();
      if (this.workers.get(index) === slot) this.workers.delete(index);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the hashing worker exited (${code})`)));
    this.workers.set(index, slot);
    return slot;
  }
}

const pool = new HashingPool();

function workerHashing(algorithms: NativeDigest[]): Hashing {
  let inFlight = 0;
  let waiting: TransformCallback | undefined;
  let failure: Error | undefined;
  let settle: { resolve(digests: Map<NativeDigest, Buffer>): void; reject(error: Error): void } | undefined;
  const result = new Promise<Map<NativeDigest, Buffer>>((resolve, reject) => (settle = { resolve, reject }));
  result.catch(() => {});
  const release = () => {
    if (waiting && (inFlight <= MAX_IN_FLIGHT_BYTES || failure)) {
      const callback = waiting;
      waiting = undefined;
      callback(failure);
    }
  };
  const channel = pool.open({
    onAck(bytes) {
      inFlight -= bytes;
      release();
    },
    onDigests(digests) {
      settle!.resolve(new Map(Object.entries(digests).map(([name, bytes]) => [name as NativeDigest, Buffer.from(bytes)])));
    },
    onFailure(error) {
      failure = error;
      settle!.reject(error);
      release();
    },
  });
  channel.post({ op: 'start', algorithms });

  // The batch being filled (taken when the first byte needs it) and its bytes so far.
  let batch: number | undefined;
  let filled = 0;
  let ended = false;
  const send = () => {
    if (batch === undefined) return;
    inFlight += filled;
    channel.hash(batch, filled);
    batch = undefined;
    filled = 0;
  };

  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (failure) return callback(failure);
      // The chunk goes on at once; a copy of its bytes is what the worker hashes.
      this.push(chunk);
      for (let offset = 0; offset < chunk.length;) {
        batch ??= batches.take();
        const take = Math.min(chunk.length - offset, BATCH_BYTES - filled);
        batches.bytes(batch).set(chunk.subarray(offset, offset + take), filled);
        filled += take;
        offset += take;
        if (filled === BATCH_BYTES) send();
      }
      waiting = callback;
      release();
    },
    flush(callback) {
      if (failure) return callback(failure);
      send();
      ended = true;
      channel.post({ op: 'end' });
      callback();
    },
    destroy(error, callback) {
      // An upload that failed midway: the worker forgets it, and the batch it was filling goes back.
      if (!ended) {
        ended = true;
        send();
        channel.post({ op: 'drop' });
        settle!.reject(error ?? new Error('the upload ended before its last byte'));
      }
      callback(error);
    },
  });
  return { transform, result: () => result };
}
