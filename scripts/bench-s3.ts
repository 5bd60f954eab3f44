// The S3 endpoint's part of `npm run bench`: PUT and GET throughput of 1 MiB and 256 MiB objects
// through the official SDK, next to a plain file copy on the same disk, and the process's RSS
// while a 1 GiB object streams up and back down. Prints figures; asserts nothing.
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createPlatformClient } from '../client/index.ts';
import { repoRoot } from './lib/run.ts';

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(4 * MiB, 0x5a);

/** `size` bytes from one reused buffer: the client holds no more than a chunk. */
function zeros(size: number): Readable {
  return Readable.from(
    (function* () {
      for (let sent = 0; sent < size; sent += CHUNK.length) yield CHUNK.subarray(0, Math.min(CHUNK.length, size - sent));
    })(),
  );
}

/** Reads a body to its end, keeping nothing. */
const discard = () => new Writable({ write: (_chunk, _encoding, callback) => callback() });

const rate = (bytes: number, ms: number) => `${((bytes / MiB / ms) * 1000).toFixed(0).padStart(5)} MiB/s`;

/** A plain copy on the same disk, made durable like a stored object (streamed, then fsync). */
async function fileCopy(dir: string, size: number): Promise<number> {
  const source = path.join(dir, `source-${size}`);
  await pipeline(zeros(size), createWriteStream(source));
  const target = path.join(dir, `copy-${size}`);
  const started = performance.now();
  await pipeline(createReadStream(source, { highWaterMark: MiB }), createWriteStream(target, { flush: true, highWaterMark: MiB }));
  const elapsed = performance.now() - started;
  rmSync(source);
  rmSync(target);
  return elapsed;
}

/** A TCP port that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** `npm start` in a process of its own (the server's RSS is its own), on free ports. */
async function startServer(dataDir: string): Promise<{ child: ChildProcess; bootstrap: Bootstrap }> {
  const [port, s3Port] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [path.join(repoRoot, 'scripts', 'start.mjs'), path.join(repoRoot, 'server', 'main.ts')], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      S3_PORT: String(s3Port),
      METRICS_PORT: 'off',
      LOG_LEVEL: 'silent',
      RATE_LIMIT: '1000000',
      OBJECT_STORE_DRIVER: 'embedded',
      SIM_LATENCY_MS: '0',
    },
    stdio: 'ignore',
  });
  const file = path.join(dataDir, 'bootstrap.json');
  for (let waited = 0; !existsSync(file); waited += 100) {
    if (child.exitCode !== null || waited > 120_000) throw new Error('the server did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Written just before the server reports it listens; give it that moment.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { child, bootstrap: JSON.parse(readFileSync(file, 'utf8')) as Bootstrap };
}

interface Bootstrap {
  org_id: string;
  api_key: string;
  base_url: string;
  s3_endpoint: string;
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

export async function runS3Bench(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-s3-'));
  const { child, bootstrap } = await startServer(dataDir);
  try {
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
    });

    console.log(`\nS3 endpoint (npm start with the embedded object store; the SDK's defaults: CRC32, aws-chunked uploads)`);
    for (const [label, size, count] of [
      ['1 MiB', MiB, 64],
      ['256 MiB', 256 * MiB, 2],
    ] as const) {
      let putMs = 0;
      let getMs = 0;
      for (let index = 0; index < count; index++) {
        const key = `object-${label}-${index}`;
        let started = performance.now();
        await s3.send(new PutObjectCommand({ Bucket: 'bench', Key: key, Body: zeros(size), ContentLength: size }));
        putMs += performance.now() - started;
        started = performance.now();
        const got = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: key }));
        await pipeline(got.Body as Readable, discard());
        getMs += performance.now() - started;
      }
      const copies = Math.min(count, 4);
      let copyMs = 0;
      for (let index = 0; index < copies; index++) copyMs += await fileCopy(dataDir, size);
      console.log(
        `  ${label.padEnd(8)} PUT ${rate(size * count, putMs)}   GET ${rate(size * count, getMs)}   plain file copy ${rate(size * copies, copyMs)}   (${count} objects, one at a time)`,
      );
    }

    // The server's RSS while a 1 GiB object goes up and comes back down, sampled every 100 ms.
    const samples: number[] = [];
    const before = rssOf(child.pid!);
    const sampler = setInterval(() => {
      const rss = rssOf(child.pid!);
      if (rss !== undefined) samples.push(rss);
    }, 100);
    const size = 1024 * MiB;
    await s3.send(new PutObjectCommand({ Bucket: 'bench', Key: 'one-gib', Body: zeros(size), ContentLength: size }));
    const got = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: 'one-gib' }));
    await pipeline(got.Body as Readable, discard());
    clearInterval(sampler);
    console.log(
      `  1 GiB up and down: server rss before ${mib(before)}, peak ${mib(samples.length ? Math.max(...samples) : undefined)}, after ${mib(rssOf(child.pid!))}`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
