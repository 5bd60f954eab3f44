// The S3 endpoint's part of `npm run bench`: PUT and GET throughput of 1 MiB and 256 MiB objects
// through the official SDK, next to a plain file copy on the same disk, and the process's RSS
// while a 1 GiB object streams up and back down. Prints figures; asserts nothing.
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createPlatformClient } from '../client/index.ts';
import { createOrganization } from '../server/auth/organizations.ts';
import { loadConfig } from '../server/config.ts';
import { withTransaction } from '../server/db/pool.ts';
import { createLogger } from '../server/logging.ts';
import { startPlatform } from '../server/platform.ts';

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

export async function runS3Bench(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-s3-'));
  const config = loadConfig({
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    S3_PORT: '0',
    METRICS_PORT: 'off',
    LOG_LEVEL: 'silent',
    RATE_LIMIT: '1000000',
    OBJECT_STORE_DRIVER: 'embedded',
    SIM_LATENCY_MS: '0',
  });
  const platform = await startPlatform(config, createLogger('silent'));
  try {
    const org = await withTransaction(platform.pool, (tx) => createOrganization(tx, { name: 'Bench S3', ownerSubject: 'bench' }));
    const client = createPlatformClient({ baseUrl: platform.url, org: org.orgId, credential: org.apiKey });
    const bucket = await client.call('createBucket', { body: { name: 'bench', versioning: false } });
    await client.waitForOperation(bucket.operation);
    const issued = await client.call('createAccessKey');
    await client.waitForOperation(issued.operation);
    const { items } = await client.call('listAccessKeys');
    const s3 = new S3Client({
      endpoint: platform.s3Url,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: items[0]!.objectstore_access_key_id!, secretAccessKey: issued.secret_access_key! },
    });

    console.log(`\nS3 endpoint (embedded object store, the SDK's defaults: CRC32 and aws-chunked uploads)`);
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
      let copyMs = 0;
      for (let index = 0; index < Math.min(count, 4); index++) copyMs += await fileCopy(dataDir, size);
      const copies = Math.min(count, 4);
      console.log(
        `  ${label.padEnd(8)} PUT ${rate(size * count, putMs)}   GET ${rate(size * count, getMs)}   plain file copy ${rate(size * copies, copyMs)}   (${count} objects, one at a time)`,
      );
    }

    // RSS while a 1 GiB object goes up and comes back down, sampled every 100 ms.
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(process.memoryUsage().rss), 100);
    const before = process.memoryUsage().rss;
    const size = 1024 * MiB;
    await s3.send(new PutObjectCommand({ Bucket: 'bench', Key: 'one-gib', Body: zeros(size), ContentLength: size }));
    const got = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: 'one-gib' }));
    await pipeline(got.Body as Readable, discard());
    clearInterval(sampler);
    const peak = Math.max(...samples);
    console.log(
      `  1 GiB up and down: rss before ${(before / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB, after ${(process.memoryUsage().rss / MiB).toFixed(0)} MiB (server and client in this one process)`,
    );
  } finally {
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
