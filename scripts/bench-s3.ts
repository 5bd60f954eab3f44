// The S3 endpoint's part of `npm run bench`: PUT and GET throughput of 1 MiB and 256 MiB objects
// through the official SDK (its defaults: CRC32 checksum, aws-chunked bodies), side by side with a
// plain file copy on the same disk, and the server's RSS while a 1 GiB object streams up and back
// down. When Ceph is installed (or CEPH_RGW_ENDPOINT names a gateway), the same figures for Ceph's
// RADOS Gateway through the rgw driver, once the embedded store is done. Rounds alternate copy,
// PUT and GET so that the noise of a shared machine falls on all alike; each figure is the median
// round. Beside the embedded store, two ceilings of this machine: the SDK against an endpoint that
// keeps nothing, and MD5 with CRC32 over the same bytes. Prints figures; asserts nothing.
import { GetObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { createPlatformClient } from '../client/index.ts';
import { load } from './bench/load.ts';
import { cpuOfNamed, cpuPer, ownCpuMs } from './bench/processes.ts';
import { cpuMs, ms, perSecond, ratio, record, section } from './bench/report.ts';
import { cephInstalled, startSingleNodeCeph, type SingleNodeCeph } from './ceph/single-node.ts';
import type { BootstrapCredentials } from '../server/bootstrap.ts';
import { readBootstrap } from './lib/bootstrap-file.ts';
import { extraNodeArgs, startAsNpmStart } from './lib/npm-start.ts';
import { freePort, startProcess, waitForHttp, type Started } from './lib/processes.ts';
import { repoRoot } from './lib/run.ts';

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(4 * MiB, 0x5a);

/** `size` bytes from one reused buffer: the client holds no more than a chunk. */
export function zeros(size: number): Readable {
  return Readable.from(
    (function* () {
      for (let sent = 0; sent < size; sent += CHUNK.length) yield CHUNK.subarray(0, Math.min(CHUNK.length, size - sent));
    })(),
  );
}

/** Reads a body to its end, keeping nothing. */
export const discard = () => new Writable({ write: (_chunk, _encoding, callback) => callback() });

/** The copy's one buffer, as `cp` reads and writes through one. */
const COPY_BUFFER = Buffer.alloc(MiB);

/**
 * The yardstick: a plain copy of a file on the same disk, as `cp` without copy_file_range does it:
 * the bytes read into user space and written out through one 1 MiB buffer, then fsync, as a
 * stored object is made durable. Not fs.copyFile: that uses copy_file_range, which never moves
 * the bytes through a process, while the endpoint must (they come from a socket). The source was
 * just written, so it is read from the page cache, as the client's bytes come from memory. One
 * reused buffer, as `cp` has, not a pair of file streams: with a fresh buffer per read (memory
 * V8 counts against its old generation) and their own overhead, the streams copied 1 MiB files at
 * 343–402 MiB/s where this loop, on the same disk in the same minutes, made 710–881: the
 * yardstick was half as fast as the copy it stands for. Returns the milliseconds the copy took.
 */
async function fileCopy(dir: string, size: number): Promise<number> {
  const source = path.join(dir, `source-${size}`);
  await pipeline(zeros(size), createWriteStream(source));
  const target = path.join(dir, `copy-${size}`);
  const started = performance.now();
  const input = await open(source, 'r');
  const output = await open(target, 'w');
  try {
    for (;;) {
      const { bytesRead } = await input.read(COPY_BUFFER, 0, COPY_BUFFER.length, null);
      if (bytesRead === 0) break;
      await output.write(COPY_BUFFER, 0, bytesRead);
    }
    await output.sync();
  } finally {
    await input.close();
    await output.close();
  }
  const elapsed = performance.now() - started;
  rmSync(source);
  rmSync(target);
  return elapsed;
}

/**
 * What a PUT must compute over its bytes, alone: MD5 (the ETag S3 gives a single-part object)
 * and CRC32 (the checksum the SDK sends by default), in one pass as the store does, on one
 * thread. MD5 cannot be split across threads (each block depends on the one before), so this is
 * the ceiling of one upload's throughput on this CPU, before a byte is read or written. Returns
 * the milliseconds it took.
 */
function hashingAlone(size: number): number {
  const started = performance.now();
  const md5 = createHash('md5');
  let checksum = 0;
  for (let done = 0; done < size; done += CHUNK.length) {
    const piece = CHUNK.subarray(0, Math.min(CHUNK.length, size - done));
    md5.update(piece);
    checksum = crc32(piece, checksum);
  }
  md5.digest();
  return performance.now() - started;
}

/** `npm start` in a process of its own (the server's RSS is its own), on free ports. */
export async function startServer(
  dataDir: string,
  root = repoRoot,
  storeEnv: Record<string, string> = {},
): Promise<{ server: Started; bootstrap: BootstrapCredentials & { s3_endpoint: string } }> {
  const [port, s3Port] = [await freePort(), await freePort()];
  const server = startAsNpmStart(
    {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      S3_PORT: String(s3Port),
      METRICS_PORT: 'off',
      LOG_LEVEL: 'silent',
      RATE_LIMIT: '1000000',
      OBJECT_STORE_DRIVER: 'embedded',
      SIM_LATENCY_MS: '0',
      ...storeEnv,
    },
    { root, nodeArgs: extraNodeArgs('BENCH_S3_NODE_ARGS'), keepLastChars: 20_000 },
  );
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, server, 120_000, 100);
  const bootstrap = await readBootstrap(dataDir, server);
  if (!bootstrap.s3_endpoint) throw new Error(`the server named no S3 endpoint in bootstrap.json:\n${server.output()}`);
  return { server, bootstrap: { ...bootstrap, s3_endpoint: bootstrap.s3_endpoint } };
}

/** Resident memory of a process (Linux /proc), in bytes; undefined elsewhere. */
function rssOf(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

const mib = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / MiB).toFixed(0)} MiB`);

/** MiB/s of `bytes` moved in `ms`. */
const throughput = (bytes: number, ms: number) => bytes / MiB / (ms / 1000);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]) => (values.length > 1 ? ` (${values.map((value) => value.toFixed(0)).join(', ')})` : '');

export interface S3BenchOptions {
  /** A smoke run: smaller objects, one round, 256 MiB for the memory figure. */
  quick: boolean;
}

/** A server under measurement and an SDK client of a bucket on it. */
interface Target {
  label: string;
  server: Started;
  dataDir: string;
  s3: S3Client;
  /** A ceiling rather than a store: printed against the copy, with no goal of its own. */
  ceiling?: boolean;
  /** The platform API of the server (none for a ceiling). */
  api?: { baseUrl: string; orgId: string; apiKey: string };
}

/**
 * The SDK against an endpoint that keeps nothing (bench/null-s3-endpoint.mjs, a process of its
 * own as the server is): the client's own share of each transfer, on the same 2 cores.
 */
async function startNullTarget(): Promise<Target> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-null-s3-'));
  const port = await freePort();
  const server = startProcess(process.execPath, [path.join(repoRoot, 'scripts', 'bench', 'null-s3-endpoint.mjs')], { PORT: String(port) });
  await waitForHttp(`http://127.0.0.1:${port}/`, server, 30_000, 50);
  const s3 = new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'NULLENDPOINT', secretAccessKey: 'unchecked' },
  });
  return { label: ' — ceiling: the SDK alone, against an endpoint that keeps nothing', server, dataDir, s3, ceiling: true };
}

async function startTarget(
  label: string,
  root: string,
  store: { env?: Record<string, string>; sdk?: Partial<S3ClientConfig> } = {},
): Promise<Target> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-s3-'));
  const { server, bootstrap } = await startServer(dataDir, root, store.env);
  const client = createPlatformClient({ baseUrl: bootstrap.base_url, org: bootstrap.org_id, credential: bootstrap.api_key });
  const bucket = await client.call('createBucket', { body: { name: 'bench', versioning: false } });
  await client.waitForOperation(bucket.operation);
  const issued = await client.call('createAccessKey');
  await client.waitForOperation(issued.operation);
  const { items } = await client.call('listAccessKeys');
  const s3 = new S3Client({
    endpoint: bootstrap.s3_endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: items[0]!.objectstore_access_key_id!, secretAccessKey: issued.secret_access_key! },
    ...store.sdk,
  });
  return { label, server, dataDir, s3, api: { baseUrl: bootstrap.base_url, orgId: bootstrap.org_id, apiKey: bootstrap.api_key } };
}

async function stopTarget(target: Target): Promise<void> {
  await target.server.stop();
  rmSync(target.dataDir, { recursive: true, force: true });
}

/** Objects measured: a label, the object size and how many objects one round moves. */
type Sizes = ReadonlyArray<readonly [label: string, size: number, count: number]>;

/**
 * Rounds of a file copy, then each target's PUTs and GETs of `count` objects, for each size;
 * records each target's median round against the copy's median. The copy is measured in the
 * same rounds, so that a shared machine's noise falls on both alike.
 */
async function measureRounds(targets: Target[], sizes: Sizes, rounds: number): Promise<void> {
  const dataDir = targets[0]!.dataDir;
  const withCeilings = targets.some((target) => target.ceiling);
  for (const [label, size, count] of sizes) {
    const copy: number[] = [];
    const hashed: number[] = [];
    const figures = targets.map(() => ({ put: [] as number[], get: [] as number[] }));
    for (let round = 0; round < rounds; round++) {
      let copyMs = 0;
      for (let index = 0; index < count; index++) copyMs += await fileCopy(dataDir, size);
      copy.push(throughput(size * count, copyMs));
      if (withCeilings) {
        let hashMs = 0;
        for (let index = 0; index < count; index++) hashMs += hashingAlone(size);
        hashed.push(throughput(size * count, hashMs));
      }
      for (const [which, { s3 }] of targets.entries()) {
        let putMs = 0;
        for (let index = 0; index < count; index++) {
          const started = performance.now();
          await s3.send(new PutObjectCommand({ Bucket: 'bench', Key: `object-${label}-${index}`, Body: zeros(size), ContentLength: size }));
          putMs += performance.now() - started;
        }
        figures[which]!.put.push(throughput(size * count, putMs));
        let getMs = 0;
        for (let index = 0; index < count; index++) {
          const started = performance.now();
          const got = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: `object-${label}-${index}` }));
          await pipeline(got.Body as Readable, discard());
          getMs += performance.now() - started;
        }
        figures[which]!.get.push(throughput(size * count, getMs));
      }
    }
    const floor = median(copy);
    const floorText = `file copy ${floor.toFixed(0)} MiB/s${spread(copy)}`;
    for (const [which, target] of targets.entries()) {
      for (const [verb, values] of [
        ['PUT', figures[which]!.put],
        ['GET', figures[which]!.get],
      ] as const) {
        record({
          figure: `S3 ${verb} ${label} objects (${count} per round)${target.label}`,
          real: `${median(values).toFixed(0)} MiB/s${spread(values)}`,
          floor: floorText,
          ratio: ratio(median(values) / floor),
          goal: target.ceiling ? undefined : '≥ 0.50× file copy',
        });
      }
    }
    if (withCeilings)
      record({
        figure: `MD5 and CRC32 of ${label} objects alone, one thread — ceiling of one PUT on this CPU (every PUT computes both)`,
        real: `${median(hashed).toFixed(0)} MiB/s${spread(hashed)}`,
        floor: floorText,
        ratio: ratio(median(hashed) / floor),
      });
  }
}

const SMALL_OBJECT = Buffer.alloc(4096, 0x61);
/** Clients sending at once in the small-object figures (the issue's 32). */
const SMALL_CLIENTS = 32;

/**
 * 4 KiB PUTs from SMALL_CLIENTS clients at once until `stop` says so (or `seconds` pass): how many
 * were stored and how many failed, counted in `figures` as they go. The clients share the SDK's
 * connection pool, as one application's would.
 */
async function smallPuts(
  s3: S3Client,
  seconds: number,
  prefix: string,
  stop = { now: false },
  figures = { stored: 0, failed: 0 },
): Promise<{ stored: number; failed: number }> {
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: SMALL_CLIENTS }, async (_, client) => {
      for (let index = 0; !stop.now && performance.now() < deadline; index++) {
        try {
          await s3.send(
            new PutObjectCommand({ Bucket: 'bench', Key: `${prefix}/${client}/${index}`, Body: SMALL_OBJECT, ContentLength: 4096 }),
          );
          figures.stored++;
        } catch {
          figures.failed++;
        }
      }
    }),
  );
  return figures;
}

/** Ceph's daemons, whose CPU a PUT through RGW costs besides the platform's. */
const CEPH_DAEMONS = ['radosgw', 'ceph-osd', 'ceph-mon'];

/**
 * 4 KiB PUTs at SMALL_CLIENTS clients: objects stored per second (goal: 1,000/s, ahead of RGW in
 * the same run), and the CPU each PUT took from the server (its Node and its PostgreSQL), from
 * Ceph's daemons for RGW, and from the SDK's clients (this process, which does nothing else
 * meanwhile): 1,000/s on 2 cores leaves 2 ms of CPU for all of them together.
 */
async function measureSmallPuts(target: Target, quick: boolean): Promise<number> {
  const seconds = quick ? 2 : 6;
  await smallPuts(target.s3, 1, 'warm-up');
  const server = { pid: target.server.child.pid!, postgresDir: path.join(target.dataDir, 'postgres') };
  const {
    result: { stored, failed },
    perUnit: perPut,
  } = await cpuPer(
    server,
    () => smallPuts(target.s3, seconds, 'small'),
    (puts) => puts.stored,
    {
      ceph: () => cpuOfNamed(CEPH_DAEMONS),
      clients: ownCpuMs,
    },
  );
  record({
    figure: `S3 PUT of 4 KiB objects, ${SMALL_CLIENTS} clients at once${target.label}`,
    real: `${perSecond(stored / seconds)}${failed ? ` (${failed} failed)` : ''}`,
    goal: target.ceiling ? undefined : '≥ 1,000/s, ahead of RGW',
  });
  if (perPut && stored > 0) {
    record({
      figure: `S3 PUT of 4 KiB objects: CPU per PUT${target.label}`,
      real:
        `server Node ${cpuMs(perPut.node)}, PostgreSQL ${cpuMs(perPut.postgres)}` +
        `${perPut.ceph > 0 ? `, Ceph's daemons ${cpuMs(perPut.ceph)}` : ''}, the SDK's clients ${cpuMs(perPut.clients)}`,
      goal: 'what 1,000/s needs: 2 ms in all on 2 cores',
    });
  }
  return stored / seconds;
}

/** The API read whose p99 the figures beside S3 take: the bucket list, at 8 connections. */
function apiRead({ api }: Target, quick: boolean) {
  if (!api) return undefined;
  const request = {
    method: 'GET' as const,
    url: `${api.baseUrl}/v1/orgs/${api.orgId}/s3/buckets`,
    headers: { authorization: `Bearer ${api.apiKey}` },
  };
  return { request, settings: { connections: 8, seconds: quick ? 2 : 5, warmupSeconds: 1 } };
}

/**
 * The API beside S3 traffic: the p99 of an API read (the bucket list, 8 connections) at rest, and
 * again while a 1 GiB object streams up and SMALL_CLIENTS clients PUT 4 KiB objects. The S3
 * endpoint runs in a thread of its own; what is left is the machine's 2 cores, shared by the
 * server, its PostgreSQL and the clients of both loads.
 */
async function measureApiBesideS3(target: Target, quick: boolean): Promise<void> {
  const read = apiRead(target, quick);
  if (!read) return;
  const { request, settings } = read;
  const quiet = await load(request, settings);
  const stop = { now: false };
  const size = (quick ? 256 : 1024) * MiB;
  const large = target.s3.send(new PutObjectCommand({ Bucket: 'bench', Key: 'beside-the-api', Body: zeros(size), ContentLength: size }));
  const smallFigures = { stored: 0, failed: 0 };
  const small = smallPuts(target.s3, 3600, 'beside-the-api', stop, smallFigures);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const storedBefore = smallFigures.stored;
  const busyStart = performance.now();
  const busy = await load(request, settings);
  // What S3 served meanwhile: the warm-up's and the measured seconds' PUTs (S3_BUSY_RATE paces them).
  const smallPerSecond = (smallFigures.stored - storedBefore) / ((performance.now() - busyStart) / 1000);
  stop.now = true;
  const [, smallStored] = await Promise.all([large, small]);
  record({
    figure: `API p99 (GET the bucket list, 8 connections) while ${quick ? '256 MiB' : '1 GiB'} streams up and ${SMALL_CLIENTS} clients PUT 4 KiB${target.label}`,
    real:
      `${ms(busy.p99)} (at rest ${ms(quiet.p99)}; p50 ${ms(busy.p50)} / ${ms(quiet.p50)}); ` +
      `meanwhile ${perSecond(smallPerSecond)} 4 KiB PUTs${smallStored.failed ? ` (${smallStored.failed} failed)` : ''}`,
    ratio: ratio(busy.p99 / quiet.p99),
    goal: '≤ 2× at rest',
  });
}

/**
 * The API beside downloads: the p99 of the same API read at rest, and again while four clients
 * GET a large object over and over. A download costs the file's reads and the socket's writes
 * (and the clients' own reading), on the same 2 cores.
 */
async function measureApiBesideDownloads(target: Target, quick: boolean): Promise<void> {
  const read = apiRead(target, quick);
  if (!read) return;
  const { request, settings } = read;
  const size = (quick ? 64 : 256) * MiB;
  await target.s3.send(new PutObjectCommand({ Bucket: 'bench', Key: 'downloaded-beside-the-api', Body: zeros(size), ContentLength: size }));
  const quiet = await load(request, settings);
  const stop = { now: false };
  let downloaded = 0;
  const downloads = Array.from({ length: 4 }, async () => {
    while (!stop.now) {
      const got = await target.s3.send(new GetObjectCommand({ Bucket: 'bench', Key: 'downloaded-beside-the-api' }));
      for await (const chunk of got.Body as Readable) {
        downloaded += (chunk as Buffer).length;
        if (stop.now) break;
      }
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = downloaded;
  const busyStart = performance.now();
  const busy = await load(request, settings);
  const mibPerSecond = (downloaded - before) / MiB / ((performance.now() - busyStart) / 1000);
  stop.now = true;
  await Promise.all(downloads);
  record({
    figure: `API p99 (GET the bucket list, 8 connections) while 4 clients GET ${size / MiB} MiB again and again${target.label}`,
    real: `${ms(busy.p99)} (at rest ${ms(quiet.p99)}; p50 ${ms(busy.p50)} / ${ms(quiet.p50)}); meanwhile ${mibPerSecond.toFixed(0)} MiB/s downloaded`,
    ratio: ratio(busy.p99 / quiet.p99),
    goal: '≤ 2× at rest',
  });
}

/** The server's RSS while a large object goes up and comes back down, sampled every 100 ms. */
async function measureStreamingMemory({ server, s3, label }: Target, quick: boolean): Promise<void> {
  const pid = server.child.pid!;
  const size = (quick ? 256 : 1024) * MiB;
  const samples: number[] = [];
  const before = rssOf(pid);
  const sampler = setInterval(() => {
    const rss = rssOf(pid);
    if (rss !== undefined) samples.push(rss);
  }, 100);
  await s3.send(new PutObjectCommand({ Bucket: 'bench', Key: 'large', Body: zeros(size), ContentLength: size }));
  const got = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: 'large' }));
  await pipeline(got.Body as Readable, discard());
  clearInterval(sampler);
  const peak = samples.length ? Math.max(...samples) : undefined;
  record({
    figure: `S3 server RSS while ${quick ? '256 MiB' : '1 GiB'} goes up and down${label}`,
    real: `before ${mib(before)}, peak ${mib(peak)}, after ${mib(rssOf(pid))}`,
    goal: 'flat (peak within 64 MiB of before)',
  });
}

/**
 * The embedded store first, alone on the machine; then, when Ceph is installed (or
 * CEPH_RGW_ENDPOINT names a gateway), Ceph's RADOS Gateway through the rgw driver, with copy
 * rounds of its own. Ceph's daemons are not running while the embedded store is measured: on 2
 * cores their background work took a third off its 1 MiB figures.
 *
 * `baseline`: another checkout of the project (BENCH_S3_BASELINE), measured in the same rounds
 * as the embedded store, so that a change is compared with what it changes under the same noise.
 */
export async function runS3Bench({
  quick,
  baseline = process.env.BENCH_S3_BASELINE,
}: S3BenchOptions & { baseline?: string }): Promise<void> {
  const sizes: Sizes = quick
    ? [
        ['1 MiB', MiB, 8],
        ['32 MiB', 32 * MiB, 1],
      ]
    : [
        ['1 MiB', MiB, 32],
        ['256 MiB', 256 * MiB, 1],
      ];
  const rounds = quick ? 1 : 5;
  const targets: Target[] = [];
  let ceph: SingleNodeCeph | undefined;
  try {
    targets.push(await startTarget('', repoRoot));
    if (baseline) targets.push(await startTarget(' (baseline)', path.resolve(baseline)));
    targets.push(await startNullTarget());
    section(
      `S3 endpoint (npm start, embedded object store; the SDK's defaults: CRC32, aws-chunked; one request at a time; ` +
        `MiB/s, median of ${rounds} rounds alternating copy, PUT and GET, each round in brackets)`,
    );
    await measureRounds(targets, sizes, rounds);
    for (const target of targets) if (!target.ceiling) await measureStreamingMemory(target, quick);
    section(
      `S3 small objects and the API beside S3 (4 KiB PUTs from ${SMALL_CLIENTS} clients at once; the API read by the load generator)`,
    );
    for (const target of targets) if (!target.ceiling) await measureSmallPuts(target, quick);
    for (const target of targets) if (!target.ceiling) await measureApiBesideS3(target, quick);
    for (const target of targets) if (!target.ceiling) await measureApiBesideDownloads(target, quick);
    while (targets.length > 0) await stopTarget(targets.pop()!);
    // The same figure with S3 not held back while the API is busy, as it ran before S3_BUSY_RATE
    // and S3_BUSY_BANDWIDTH: what their defaults (admission.ts) change on this machine.
    targets.push(
      await startTarget(' (S3_BUSY_RATE=0 S3_BUSY_BANDWIDTH=0: S3 not held back while the API is busy)', repoRoot, {
        env: { S3_BUSY_RATE: '0', S3_BUSY_BANDWIDTH: '0' },
      }),
    );
    await measureApiBesideS3(targets[0]!, quick);
    await measureApiBesideDownloads(targets[0]!, quick);
    await stopTarget(targets.pop()!);

    if (!process.env.CEPH_RGW_ENDPOINT && !cephInstalled()) {
      section('RGW: not measured, Ceph is not installed (apt-get install ceph-mon ceph-osd radosgw ceph-common)');
      return;
    }
    ceph = await startSingleNodeCeph();
    // RGW (Pacific) does not take the SDK's default streaming checksums.
    targets.push(
      await startTarget(' (RGW)', repoRoot, {
        env: ceph.env,
        sdk: { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' },
      }),
    );
    section(
      "S3 through Ceph's RADOS Gateway and the rgw driver (single-node Ceph on memstore; checksums when required; " +
        `one request at a time; MiB/s, median of ${rounds} rounds, with copy rounds of its own)`,
    );
    await measureRounds(targets, sizes, rounds);
    await measureSmallPuts(targets[0]!, quick);
  } finally {
    for (const target of targets) await stopTarget(target);
    await ceph?.stop();
  }
}
