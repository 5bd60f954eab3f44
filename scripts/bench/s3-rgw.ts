// S3 throughput on Ceph's RADOS Gateway through the platform's rgw driver: a single-node Ceph
// (scripts/ceph), the platform on it, a bucket and an access key made through the API, then PUT
// and GET of 1 MiB objects (several at a time) and of one 256 MiB object. Prints figures; asserts
// nothing. Part of `npm run bench` when Ceph is installed (or CEPH_RGW_ENDPOINT names a gateway).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { components } from '../../generated/openapi.ts';
import { createOrganization } from '../../server/auth/organizations.ts';
import { loadConfig } from '../../server/config.ts';
import { withTransaction } from '../../server/db/pool.ts';
import { createLogger } from '../../server/logging.ts';
import { startPlatform } from '../../server/platform.ts';
import { cephInstalled, startSingleNodeCeph } from '../ceph/single-node.ts';

const MiB = 1024 ** 2;
type Schemas = components['schemas'];

export interface S3Target {
  client: S3Client;
  bucket: string;
}

/** PUT then GET of `count` objects of `size` bytes, `concurrency` at a time; prints MiB/s and objects/s. */
export async function measureS3Throughput(
  label: string,
  target: S3Target,
  size: number,
  count: number,
  concurrency: number,
): Promise<void> {
  const body = Buffer.alloc(size, 0x5a);
  const run = async (work: (index: number) => Promise<void>): Promise<number> => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(concurrency, count) }, async () => {
        while (next < count) await work(next++);
      }),
    );
    return (performance.now() - started) / 1000;
  };
  const key = (index: number) => `bench/${size}/${index}`;
  const putSeconds = await run(async (index) => {
    await target.client.send(new PutObjectCommand({ Bucket: target.bucket, Key: key(index), Body: body }));
  });
  const getSeconds = await run(async (index) => {
    const got = await target.client.send(new GetObjectCommand({ Bucket: target.bucket, Key: key(index) }));
    const bytes = await got.Body!.transformToByteArray();
    if (bytes.length !== size) throw new Error(`GET ${key(index)}: ${bytes.length} bytes, not ${size}`);
  });
  const figures = (seconds: number) =>
    `${((size * count) / MiB / seconds).toFixed(0).padStart(5)} MiB/s ${(count / seconds).toFixed(1).padStart(7)} objects/s`;
  const what = `${label} ${size >= MiB ? `${size / MiB} MiB` : `${size} B`} x${count}`;
  console.log(`  PUT ${what.padEnd(28)} ${figures(putSeconds)}`);
  console.log(`  GET ${what.padEnd(28)} ${figures(getSeconds)}`);
}

/** The throughput figures on RGW; says why when there is no Ceph to measure. */
export async function benchS3OnRgw(): Promise<void> {
  console.log('\nS3 throughput on Ceph RGW (rgw driver, single-node Ceph, memstore)');
  if (!process.env.CEPH_RGW_ENDPOINT && !cephInstalled()) {
    console.log('  skipped: Ceph is not installed (apt-get install ceph-mon ceph-osd radosgw ceph-common)');
    return;
  }
  const ceph = await startSingleNodeCeph();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cloud-platform-bench-rgw-'));
  const config = loadConfig({
    ...process.env,
    ...ceph.env,
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'silent',
    RATE_LIMIT: '1000000',
    WORKER_POLL_MS: '50',
    RECONCILE_INTERVAL_MS: '1000',
  });
  const platform = await startPlatform(config, createLogger('silent'));
  try {
    const org = await withTransaction(platform.pool, (tx) => createOrganization(tx, { name: 'Bench', ownerSubject: 'bench' }));
    const api = async <T>(method: string, orgPath: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${platform.url}/v1/orgs/${org.orgId}${orgPath}`, {
        method,
        headers: { Authorization: `Bearer ${org.apiKey}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await response.json()) as T;
    };
    const settled = async (operationId: string): Promise<void> => {
      for (;;) {
        const operation = await api<Schemas['OperationRef']>('GET', `/operations/${operationId}`);
        if (operation.finished_at) {
          if (operation.state !== 'succeeded') throw new Error(`${operation.type}: ${operation.state} (${operation.error_detail})`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const bucket = await api<Schemas['BucketAccepted']>('POST', '/s3/buckets', { name: 'bench' });
    await settled(bucket.operation.id);
    const key = await api<Schemas['AccessKeyCreated']>('POST', '/s3/access-keys');
    await settled(key.operation.id);
    const listed = await api<Schemas['AccessKeyList']>('GET', '/s3/access-keys');
    const issued = listed.items.find((item) => item.id === key.access_key.id);
    if (!issued?.objectstore_access_key_id || !key.secret_access_key) throw new Error('the access key was not issued');
    const client = new S3Client({
      endpoint: ceph.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: issued.objectstore_access_key_id, secretAccessKey: key.secret_access_key },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    await measureS3Throughput('rgw', { client, bucket: 'bench' }, MiB, 64, 8);
    await measureS3Throughput('rgw', { client, bucket: 'bench' }, 256 * MiB, 2, 1);
    client.destroy();
  } finally {
    await platform.close();
    await ceph.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
