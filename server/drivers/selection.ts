import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config, RgwConfig } from '../config.ts';
import type { Logger } from '../logging.ts';
import type { DatabaseListener } from '../db/listener.ts';
import type { Pool } from '../db/pool.ts';
import { createEmbeddedObjectStore, type EmbeddedObjectStore } from './embedded/store.ts';
import type { Drivers } from './index.ts';
import { FaultInjector, parseFaultRules } from './simulators/faults.ts';
import { createSimulatedDrivers } from './simulators/index.ts';

/** The simulated backends' tables (fault counters among them), applied where a simulator is chosen. */
const SIMULATOR_MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'simulators', 'migrations');
/** The embedded object store's tables. */
const EMBEDDED_STORE_MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'embedded', 'migrations');
/** The rgw driver's record of which RGW bucket is which platform bucket. */
const RGW_MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rgw', 'migrations');

/** The migration folders the chosen drivers need beside the platform's own. */
export function driverMigrations(choice: Config['drivers']): string[] {
  return [
    // The fault counters live with the simulators' tables, and the embedded store injects faults too.
    ...(Object.values(choice).includes('simulator') || choice.objectStore === 'embedded' ? [SIMULATOR_MIGRATIONS] : []),
    ...(choice.objectStore === 'embedded' ? [EMBEDDED_STORE_MIGRATIONS] : []),
    ...(choice.objectStore === 'rgw' ? [RGW_MIGRATIONS] : []),
  ];
}

/** The drivers, and the embedded object store when it is the one chosen (the S3 endpoint serves it). */
export interface DriverSet extends Drivers {
  embeddedStore: EmbeddedObjectStore | undefined;
}

/** The settings the embedded object store is opened with (see createEmbeddedObjectStore). */
export interface EmbeddedStoreSettings {
  simulators: Config['simulators'];
  dataDir: string;
  secretStoreKey: string | undefined;
  /** Multipart uploads older than this are aborted by the embedded store's sweep. */
  incompleteUploadRetentionMs?: number;
  /** How long a day of S3 lifecycle rules lasts for the embedded store. */
  lifecycleDayMs?: number;
  /** The listener that holds the store's instance lock (see createEmbeddedObjectStore). */
  listener?: DatabaseListener;
}

/** The embedded store's settings as the platform's configuration gives them. */
export function embeddedStoreSettingsOf(config: Config): EmbeddedStoreSettings {
  return {
    simulators: config.simulators,
    dataDir: config.dataDir,
    secretStoreKey: config.s3.secretStoreKey,
    incompleteUploadRetentionMs: config.s3.incompleteUploadRetentionSeconds * 1000,
    lifecycleDayMs: config.s3.lifecycleDaySeconds * 1000,
  };
}

/**
 * Opens the embedded object store with these settings: the driver's instance, and the S3 endpoint's
 * own in its thread (another instance on the same files and tables, as another process's would be).
 */
export function openEmbeddedStore(pool: Pool, settings: EmbeddedStoreSettings): Promise<EmbeddedObjectStore> {
  return createEmbeddedObjectStore({
    pool,
    dataDir: settings.dataDir,
    secretKey: settings.secretStoreKey,
    incompleteUploadRetentionMs: settings.incompleteUploadRetentionMs,
    lifecycleDayMs: settings.lifecycleDayMs,
    faults: new FaultInjector(pool, parseFaultRules(settings.simulators.faults)),
    latencyMs: settings.simulators.embeddedStoreLatencyMs,
    listener: settings.listener,
  });
}

/**
 * Builds the chosen drivers. `pool` is the backends' own connection pool (the simulators and the
 * embedded store keep their state in the database, on connections the API's requests never wait for).
 * The real drivers (QEMU, RGW) are imported only when chosen: the RGW driver's AWS signing
 * libraries alone were 15 to 25 ms of every start that used the embedded store.
 */
export async function createDrivers(
  choice: Config['drivers'],
  pool: Pool,
  options: EmbeddedStoreSettings & {
    rgw?: Config['rgw'];
    /** The QEMU driver's settings (COMPUTE_DRIVER=qemu) and the log it reports to. */
    qemu?: Config['qemu'];
    log?: Logger;
  },
): Promise<DriverSet> {
  // Each choice is checked by loadConfig, so a new driver is one more case here, not a change of the areas.
  const simulated = createSimulatedDrivers(pool, options.simulators);
  const embeddedStore = choice.objectStore === 'embedded' ? await openEmbeddedStore(pool, options) : undefined;
  return {
    hypervisor: await hypervisorOf(choice.compute, {
      simulated: simulated.hypervisor,
      dataDir: options.dataDir,
      qemu: options.qemu,
      log: options.log,
    }),
    objectStore: await objectStoreOf(choice.objectStore, { embeddedStore, simulated: simulated.objectStore, pool, rgw: options.rgw }),
    billing: choice.billing === 'simulator' ? simulated.billing : unreachable(choice.billing),
    embeddedStore,
  };
}

async function hypervisorOf(
  choice: Config['drivers']['compute'],
  built: { simulated: Drivers['hypervisor']; dataDir: string; qemu: Config['qemu']; log: Logger | undefined },
): Promise<Drivers['hypervisor']> {
  switch (choice) {
    case 'simulator':
      return built.simulated;
    case 'qemu': {
      if (!built.qemu || !built.log) throw new Error('COMPUTE_DRIVER is qemu, but no QEMU settings or log were given');
      const { createQemuHypervisor } = await import('./qemu/driver.ts');
      return createQemuHypervisor({ dataDir: built.dataDir, config: built.qemu, log: built.log.child({ component: 'qemu' }) });
    }
    default:
      return unreachable(choice);
  }
}

async function objectStoreOf(
  choice: Config['drivers']['objectStore'],
  built: { embeddedStore: EmbeddedObjectStore | undefined; simulated: Drivers['objectStore']; pool: Pool; rgw: Config['rgw'] },
): Promise<Drivers['objectStore']> {
  switch (choice) {
    case 'embedded':
      return built.embeddedStore!;
    case 'simulator':
      return built.simulated;
    case 'rgw': {
      const settings = rgwSettings(built.rgw);
      const { createRgwObjectStore } = await import('./rgw/object-store.ts');
      return createRgwObjectStore(built.pool, settings);
    }
    default:
      return unreachable(choice);
  }
}

function rgwSettings(rgw: Config['rgw']): RgwConfig {
  if (!rgw) throw new Error('OBJECT_STORE_DRIVER is rgw, but no RGW settings were loaded');
  return rgw;
}

function unreachable(choice: never): never {
  throw new Error(`no such driver: ${String(choice)}`);
}
