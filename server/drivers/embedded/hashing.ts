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
// Node 22.18+ stripping types), without a loader. Jobs are uploads; updates are acknowledged so
// that the sender can bound what it has handed over.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { crc32 } = require('node:zlib');
const jobs = new Map();
parentPort.on('message', (message) => {
  if (message.op === 'start') {
    jobs.set(message.job, message.algorithms.map((algorithm) =>
      algorithm === 'crc32' ? { algorithm, crc: 0 } : { algorithm, hash: createHash(algorithm) }));
  } else if (message.op === 'update') {
    const job = jobs.get(message.job);
    const data = new Uint8Array(message.data, 0, message.length);
    if (job) for (const state of job) state.hash ? state.hash.update(data) : (state.crc = crc32(data, state.crc));
    parentPort.postMessage({ job: message.job, ack: message.length });
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
  }
});
`;

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
  open(job: Job): { id: number; post(message: object, transfer?: ArrayBuffer[]): void } {
    const id = this.nextJob++;
    const index = this.nextWorker++ % this.size;
    const slot = this.slot(index);
    slot.jobs.set(id, job);
    clearTimeout(slot.idle);
    slot.idle = undefined;
    return {
      id,
      post: (message, transfer) => {
        slot.worker.postMessage({ job: id, ...message }, transfer);
        if ((message as { op?: string }).op === 'drop') this.done(index, slot, id);
      },
    };
  }

  /** A job is over: its worker ends once it has had nothing to do for a while. */
  private done(index: number, slot: Slot, id: number): void {
    slot.jobs.delete(id);
    if (slot.jobs.size > 0 || slot.idle) return;
    slot.idle = setTimeout(() => {
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
    const slot: Slot = { worker, jobs: new Map<number, Job>(), idle: undefined };
    worker.on('message', (message: { job: number; ack?: number; digests?: Record<string, Uint8Array> }) => {
      const job = slot.jobs.get(message.job);
      if (!job) return;
      if (message.ack !== undefined) job.onAck(message.ack);
      if (message.digests) {
        this.done(index, slot, message.job);
        job.onDigests(message.digests);
      }
    });
    const fail = (error: Error) => {
      // A worker that died takes its jobs with it (their uploads fail); the next upload gets a new one.
      clearTimeout(slot.idle);
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

  let batch = new ArrayBuffer(BATCH_BYTES);
  let filled = 0;
  let ended = false;
  const send = () => {
    if (filled === 0) return;
    inFlight += filled;
    // The batch is handed over (transferred, not copied again); a new one takes its place.
    channel.post({ op: 'update', data: batch, length: filled }, [batch]);
    batch = new ArrayBuffer(BATCH_BYTES);
    filled = 0;
  };

  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (failure) return callback(failure);
      // The chunk goes on at once; a copy of its bytes is what the worker hashes.
      this.push(chunk);
      for (let offset = 0; offset < chunk.length;) {
        const take = Math.min(chunk.length - offset, BATCH_BYTES - filled);
        new Uint8Array(batch, filled, take).set(chunk.subarray(offset, offset + take));
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
      // An upload that failed midway: the worker forgets it. (Destroyed after its end too: then nothing to do.)
      if (!ended) {
        ended = true;
        channel.post({ op: 'drop' });
        settle!.reject(error ?? new Error('the upload ended before its last byte'));
      }
      callback(error);
    },
  });
  return { transform, result: () => result };
}
