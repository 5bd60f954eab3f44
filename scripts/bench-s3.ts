// The S3 endpoint's part of `npm run bench`: PUT and GET throughput of 1 MiB and 256 MiB objects
// through the official SDK, on the embedded store and, when Ceph is installed (or CEPH_RGW_ENDPOINT
// names a gateway), on RGW through the rgw driver, side by side with a plain file copy on the same
// disk; and the server's RSS while a 1 GiB object streams up and back down the embedded store.
// Prints figures; asserts nothing.
import { GetObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createPlatformClient } from '../client/index.ts';
import { cephInstalled, startSingleNodeCeph } from './ceph/single-node.ts';
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
async function startServer(dataDir: string, storeEnv: Record<string, string>): Promise<{ child: ChildProcess; bootstrap: Bootstrap }> {
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
      ...storeEnv,
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

/** PUT and GET rates of one store, per object size, in MiB/s. */
interface StoreFigures {
  rates: Map<string, { put: number; get: number }>;
}

const SIZES = [
  ['1 MiB', MiB, 64],
  ['256 MiB', 256 * MiB, 2],
] as const;

/**
 * One store measured through `npm start` and the endpoint it tells users: a bucket and a key made
 * through the API, then objects PUT and read back one at a time. With `withMemory`, the server's
 * RSS while a 1 GiB object streams through it (the embedded store; RGW's bytes never pass the server).
 */
async function measureStore(
  name: string,
  storeEnv: Record<string, string>,
  options: { withMemory: boolean; sdk: Partial<S3ClientConfig> },
): Promise<StoreFigures> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `cloud-platform-bench-s3-${name}-`));
  const { child, bootstrap } = await startServer(dataDir, storeEnv);
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
      ...options.sdk,
    });
    const rates = new Map<string, { put: number; get: number }>();
    for (const [label, size, count] of SIZES) {
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
      rates.set(label, { put: (size * count) / MiB / (putMs / 1000), get: (size * count) / MiB / (getMs / 1000) });
    }

    if (options.withMemory) {
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
        `  1 GiB up and down (${name}): server rss before ${mib(before)}, peak ${mib(samples.length ? Math.max(...samples) : undefined)}, after ${mib(rssOf(child.pid!))}`,
      );
    }
    s3.destroy();
    return { rates };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The same figures on Ceph's RADOS Gateway (rgw driver, single-node Ceph on memstore), when Ceph is there. */
async function measureRgw(): Promise<StoreFigures | string> {
  if (!process.env.CEPH_RGW_ENDPOINT && !cephInstalled())
    return 'Ceph is not installed (apt-get install ceph-mon ceph-osd radosgw ceph-common)';
  const ceph = await startSingleNodeCeph();
  try {
    // RGW (Pacific) does not take the SDK's default streaming checksums.
    return await measureStore('rgw', ceph.env, {
      withMemory: false,
      sdk: { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' },
    });
  } finally {
    await ceph.stop();
  }
}

export async function runS3Bench(): Promise<void> {
  console.log(
    `\nS3 endpoint, side by side: the embedded object store (the SDK's defaults: CRC32, aws-chunked uploads) and Ceph RGW through the rgw driver (single-node, memstore; checksums when required), one object at a time`,
  );
  const embedded = await measureStore('embedded', { OBJECT_STORE_DRIVER: 'embedded' }, { withMemory: true, sdk: {} });
  const rgw = await measureRgw();
  const copyDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-copy-'));
  try {
    for (const [label, size, count] of SIZES) {
      const copies = Math.min(count, 4);
      let copyMs = 0;
      for (let index = 0; index < copies; index++) copyMs += await fileCopy(copyDir, size);
      const own = embedded.rates.get(label)!;
      const other = typeof rgw === 'string' ? undefined : rgw.rates.get(label)!;
      const mibs = (value: number) => `${value.toFixed(0).padStart(5)} MiB/s`;
      console.log(
        `  ${label.padEnd(8)} embedded PUT ${mibs(own.put)} GET ${mibs(own.get)}   rgw ${other ? `PUT ${mibs(other.put)} GET ${mibs(other.get)}` : 'n/a'}   plain file copy ${rate(size * copies, copyMs)}   (${count} objects)`,
      );
    }
    if (typeof rgw === 'string') console.log(`  rgw: skipped, ${rgw}`);
  } finally {
    rmSync(copyDir, { recursive: true, force: true });
  }
}
