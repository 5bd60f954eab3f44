// The S3 endpoint's own thread (started by s3-thread.ts): the endpoint with its own event loop and
// heap, so that bodies streaming in and out, their hashing and the store's queries never delay an
// API request. It opens what it needs itself: its connections, its instance of the embedded store
// (another instance on the same files and tables, as another process's would be), and its cache
// of accepted keys, which listens on the credentials' channel as the API's does, so that a revoke
// still answers only once this thread too has forgotten the key, and its cache of served buckets,
// which listens on the buckets' channel. Bucket changes (create, delete, versioning) go through
// the platform's services, which live in the main thread: it is asked.
import { readFileSync } from 'node:fs';
import module from 'node:module';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pino } from 'pino';
import type { Config } from '../../config.ts';
import { readApiActivity } from '../../core/api-activity.ts';
import { BUCKET_CHANNEL, bucketTagsOf } from '../../core/bucket-announcements.ts';
import { CREDENTIAL_CHANNEL, credentialTagsOf } from '../../core/credential-announcements.ts';
import { callsTo } from '../../core/thread-calls.ts';
import { AnnouncedCache, sectionOf } from '../../db/announced-cache.ts';
import { DatabaseListener } from '../../db/listener.ts';
import { createPool } from '../../db/pool.ts';
import type { Caller } from '../../drivers/embedded/s3/access.ts';
import type { S3Platform } from '../../drivers/embedded/s3/platform-port.ts';
import type { ServedBucket } from '../../drivers/embedded/rows.ts';
import { admission } from '../../drivers/embedded/s3/admission.ts';
import { startS3Endpoint } from '../../drivers/embedded/s3/server.ts';
import { embeddedStoreSettingsOf, openEmbeddedStore } from '../../drivers/selection.ts';
import { S3_PLATFORM_CHANGES, s3Reads } from './s3-port.ts';
import { lowerBackendPriority, lowerThreadPriority } from './s3-priority.ts';

/** What the main thread hands over (s3-thread.ts). */
export interface S3ThreadData {
  config: Config;
  connectionString: string;
  /** Connections of this thread's pool: the store's queries of concurrent requests. */
  poolSize: number;
  /** Where the platform's bucket changes are asked for. */
  changes: MessagePort;
  /** Where this thread's log lines go (as JSON lines; the main thread's logger writes them). */
  logs: MessagePort;
  /** The API's requests in flight (core/api-activity.ts), shared memory; absent: no API to yield to. */
  apiActivity: SharedArrayBuffer | undefined;
}

/** What this thread tells the main thread. */
export type S3ThreadMessage = { listening: string } | { failed: string } | { closed: true };

const data = workerData as S3ThreadData;
const parent = parentPort!;
const { config } = data;

const log = pino({ level: config.logLevel, base: undefined, timestamp: false }, { write: (line: string) => data.logs.postMessage(line) });

// The endpoint yields the CPU to the API (s3-priority.ts): this thread first, before it starts
// the threads that hash bodies; then each backend of its connections, as the pool opens it.
const nice = config.s3.nice > 0 ? lowerThreadPriority(config.s3.nice) : undefined;
if (config.s3.nice > 0 && nice === undefined)
  log.info("the S3 endpoint runs at the API's priority: this system does not let a thread lower its own");

const pool = createPool(data.connectionString, data.poolSize, config.database, 'cloud-platform-s3', 0);
// Only the embedded database's backends are processes this server started on this machine.
if (nice !== undefined && config.databaseUrl === undefined) {
  pool.on('connect', (client) => {
    // The backend's process id, as PostgreSQL told it when the connection opened (pg's types omit it).
    const { processID } = client as typeof client & { processID: number | null };
    if (processID) lowerBackendPriority(processID, nice);
  });
}
const listener = new DatabaseListener(pool.options, log);
const keys = new AnnouncedCache<unknown>(listener, CREDENTIAL_CHANNEL, credentialTagsOf);
const served = new AnnouncedCache<ServedBucket>(listener, BUCKET_CHANNEL, bucketTagsOf);
const platform: S3Platform = {
  ...s3Reads(pool),
  ...callsTo<S3Platform, (typeof S3_PLATFORM_CHANGES)[number]>(data.changes, S3_PLATFORM_CHANGES),
};

try {
  const store = await openEmbeddedStore(pool, { ...embeddedStoreSettingsOf(config), listener });
  await listener.start();
  const endpoint = await startS3Endpoint({
    store,
    platform,
    keys: sectionOf<Caller>(keys, 's3'),
    served: sectionOf<ServedBucket>(served, 'bucket'),
    port: config.s3.port,
    host: config.host,
    tls: config.s3.tls && { cert: readFileSync(config.s3.tls.certFile), key: readFileSync(config.s3.tls.keyFile) },
    trustForwardedProto: config.s3.trustForwardedProto,
    region: config.s3.region,
    bodyTimeoutMs: config.s3.bodyTimeoutSeconds * 1000,
    publicAccess: config.s3.publicAccess
      ? { rateLimit: config.s3.publicRateLimit, windowSeconds: config.rateLimit.windowSeconds }
      : undefined,
    // While the API is busy, S3 requests start, and upload and download bodies pass, at a pace (admission.ts).
    admission:
      data.apiActivity && (config.s3.busyRate > 0 || config.s3.busyBandwidthMiB > 0)
        ? admission({
            apiBusy: readApiActivity(data.apiActivity).busy,
            busyRate: config.s3.busyRate,
            busyBytesPerSecond: config.s3.busyBandwidthMiB * 1024 * 1024,
          })
        : undefined,
    log,
  });
  parent.once('message', () => {
    // Asked to stop: requests in flight end, then the store, the listener and the connections.
    void (async () => {
      await endpoint.close();
      await store.close();
      await listener.stop();
      await pool.end();
      parent.postMessage({ closed: true } satisfies S3ThreadMessage);
      data.changes.close();
      data.logs.close();
    })();
  });
  parent.postMessage({ listening: endpoint.url } satisfies S3ThreadMessage);
  // What this thread compiled is written to Node's compile cache now (as scripts/start.mjs does
  // for the main thread), rather than when it ends, which a killed process never reaches.
  module.flushCompileCache?.();
} catch (error) {
  await listener.stop().catch(() => {});
  await pool.end().catch(() => {});
  parent.postMessage({ failed: (error as Error).message } satisfies S3ThreadMessage);
  data.changes.close();
  data.logs.close();
}
