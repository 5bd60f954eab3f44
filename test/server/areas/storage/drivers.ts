// The object stores the storage behaviour tests run on, each with its data plane (what an S3
// client of an organization does: put, get, delete, list versions). The simulator and the
// embedded store in the quick tier; the rgw driver on a real single-node Ceph in the system tier,
// whenever Ceph is installed (in CI always: a missing Ceph fails there, see test/support/ceph.ts).
// Another driver is one more entry here.
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { expect, test } from 'vitest';
import { WriteRefusedError } from '../../../../server/drivers/simulators/object-store.ts';
import { CEPH_MISSING, rgwTestable, startCeph } from '../../../support/ceph.ts';
import type { TestOrg, TestServer } from '../../../support/server.ts';
import { ONE_CONNECTION_PER_REQUEST } from '../../drivers/embedded/s3/support.ts';
import { objectStoreOf } from './support.ts';

/** How a write ended: stored (with its version id), or refused with S3's error code. */
export type WriteOutcome = { stored: true; versionId: string } | { stored: false; code: string };

export interface DataPlane {
  put(org: TestOrg, bucket: string, key: string, sizeBytes: number): Promise<WriteOutcome>;
  /** Without a version id: a delete marker (versioned) or removal; with one, that version goes. */
  delete(org: TestOrg, bucket: string, key: string, versionId?: string): Promise<{ versionId: string; deleteMarker: boolean }>;
  versions(org: TestOrg, bucket: string): Promise<Array<{ key: string; versionId: string; deleteMarker: boolean }>>;
  /** Bytes read back (the simulator holds sizes only: null). */
  get(org: TestOrg, bucket: string, key: string): Promise<Buffer | null>;
  /**
   * Stores at least `bytes` in the bucket, cheaply: on RGW one object and server-side copies of
   * it (RGW shares the copied data, so a gigabyte costs a few megabytes of memory).
   */
  fill(org: TestOrg, bucket: string, bytes: number): Promise<void>;
}

export type StoreName = 'simulator' | 'embedded' | 'rgw';

export interface StorageDriverUnderTest {
  name: StoreName;
  /** What the platform server needs to use this store. */
  env: Record<string, string>;
  /**
   * The S3 endpoint the started server tells users (where an S3 client of an organization goes,
   * with a key from issuedAccessKey); undefined for a store without one (the simulator).
   */
  s3Endpoint(server: TestServer): string | undefined;
  /** The data plane of a started server. */
  dataPlane(server: TestServer): DataPlane;
  stop(): Promise<void>;
}

export interface StorageDriverFactory {
  name: StoreName;
  start(): Promise<StorageDriverUnderTest>;
}

/**
 * The stores of `names` to run the storage behaviour on: the simulator (it has no S3 endpoint),
 * the embedded store (the default), and the rgw driver on a single-node Ceph when Ceph is there.
 * The in-process stores run in the quick tier; Ceph is processes of its own, so the rgw runs are
 * the system tier's (`*.system.test.ts`).
 */
export function storageDrivers(names: StoreName[]): StorageDriverFactory[] {
  const drivers: StorageDriverFactory[] = [];
  if (names.includes('simulator')) drivers.push({ name: 'simulator', start: () => Promise.resolve(simulatorDriver()) });
  if (names.includes('embedded')) drivers.push({ name: 'embedded', start: () => Promise.resolve(embeddedDriver()) });
  if (names.includes('rgw')) {
    if (rgwTestable()) drivers.push({ name: 'rgw', start: startRgwDriver });
    // Shown as a skipped test in the run's report, so a run without Ceph says what it left out.
    else test.skip(CEPH_MISSING, () => {});
  }
  return drivers;
}

function simulatorDriver(): StorageDriverUnderTest {
  return {
    name: 'simulator',
    env: {},
    s3Endpoint: () => undefined,
    stop: () => Promise.resolve(),
    dataPlane(server) {
      const store = objectStoreOf(server);
      const refusalCode = { no_such_bucket: 'NoSuchBucket', writes_suspended: 'AccessDenied' } as Record<string, string>;
      return {
        async put(org, bucket, key, sizeBytes) {
          try {
            return { stored: true, ...(await store.putObject({ orgId: org.orgId, bucket, key, sizeBytes })) };
          } catch (error) {
            if (!(error instanceof WriteRefusedError)) throw error;
            return { stored: false, code: refusalCode[error.reason] ?? 'QuotaExceeded' };
          }
        },
        delete: (org, bucket, key, versionId) => store.deleteObject({ orgId: org.orgId, bucket, key, versionId }),
        versions: (org, bucket) => store.listObjectVersions({ orgId: org.orgId, bucket }),
        get: () => Promise.resolve(null),
        async fill(org, bucket, bytes) {
          await store.putObject({ orgId: org.orgId, bucket, key: 'fill', sizeBytes: bytes });
        },
      };
    },
  };
}

/** The embedded object store, the default: its S3 endpoint beside the API. */
function embeddedDriver(): StorageDriverUnderTest {
  return {
    name: 'embedded',
    env: { OBJECT_STORE_DRIVER: 'embedded' },
    s3Endpoint: (server) => server.s3PublicUrl,
    stop: () => Promise.resolve(),
    dataPlane: (server) => s3DataPlane(server, server.s3PublicUrl!),
  };
}

async function startRgwDriver(): Promise<StorageDriverUnderTest> {
  const ceph = await startCeph();
  return {
    name: 'rgw',
    env: ceph.env,
    s3Endpoint: (server) => server.s3PublicUrl,
    stop: () => ceph.stop(),
    dataPlane: (server) => s3DataPlane(server, server.s3PublicUrl!),
  };
}

/** The data plane as an organization's S3 client sees it: the SDK with a key issued through the platform. */
function s3DataPlane(server: TestServer, endpoint: string): DataPlane {
  const clients = new Map<string, Promise<S3Client>>();
  const clientOf = (org: TestOrg): Promise<S3Client> => {
    let client = clients.get(org.orgId);
    if (!client) {
      client = s3ClientOf(server, org, endpoint);
      clients.set(org.orgId, client);
    }
    return client;
  };
  return {
    async put(org, bucket, key, sizeBytes) {
      try {
        const put = await (await clientOf(org)).send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: Buffer.alloc(sizeBytes, 7) }));
        return { stored: true, versionId: put.VersionId ?? 'null' };
      } catch (error) {
        if (!(error instanceof S3ServiceException)) throw error;
        return { stored: false, code: error.name };
      }
    },
    async delete(org, bucket, key, versionId) {
      const deleted = await (await clientOf(org)).send(new DeleteObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }));
      return { versionId: deleted.VersionId ?? 'null', deleteMarker: deleted.DeleteMarker ?? false };
    },
    async versions(org, bucket) {
      const listed = await (await clientOf(org)).send(new ListObjectVersionsCommand({ Bucket: bucket }));
      return [
        ...(listed.Versions ?? []).map((version) => ({ key: version.Key!, versionId: version.VersionId!, deleteMarker: false })),
        ...(listed.DeleteMarkers ?? []).map((marker) => ({ key: marker.Key!, versionId: marker.VersionId!, deleteMarker: true })),
      ];
    },
    async get(org, bucket, key) {
      const got = await (await clientOf(org)).send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await got.Body!.transformToByteArray());
    },
    async fill(org, bucket, bytes) {
      const client = await clientOf(org);
      const piece = 64 * 1024 ** 2;
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'fill-0', Body: Buffer.alloc(piece, 1) }));
      for (let copy = 1; copy * piece < bytes; copy++) {
        await client.send(new CopyObjectCommand({ Bucket: bucket, Key: `fill-${copy}`, CopySource: `${bucket}/fill-0` }));
      }
    },
  };
}

/** An S3 client of the store's endpoint with a new access key of the organization, issued through the platform. */
export async function s3ClientOf(server: TestServer, org: TestOrg, endpoint: string): Promise<S3Client> {
  const credentials = await issuedAccessKey(server, org);
  return s3Client(endpoint, credentials);
}

export function s3Client(endpoint: string, credentials: { accessKeyId: string; secretAccessKey: string }): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    // RGW (Pacific) does not take the SDK's default streaming checksums (the embedded store takes
    // both; test/server/s3 covers its defaults).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
    requestHandler: { httpAgent: ONE_CONNECTION_PER_REQUEST },
  });
}

/** A new S3 access key of the organization, issued through the platform and active. */
export async function issuedAccessKey(
  server: TestServer,
  org: TestOrg,
): Promise<{ keyId: string; accessKeyId: string; secretAccessKey: string }> {
  const created = await org.call('POST', '/s3/access-keys');
  expect(created.status, created.text).toBe(202);
  const operation = await server.waitForOperation(org, created.body.operation.id);
  expect(operation.state, JSON.stringify(operation)).toBe('succeeded');
  const keys = (await org.call('GET', '/s3/access-keys?limit=200')).body.items as Array<{ id: string; objectstore_access_key_id: string }>;
  const key = keys.find((item) => item.id === created.body.access_key.id)!;
  return { keyId: key.id, accessKeyId: key.objectstore_access_key_id, secretAccessKey: created.body.secret_access_key };
}
