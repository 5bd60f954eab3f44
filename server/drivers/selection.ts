import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config, RgwConfig } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import type { Drivers } from './index.ts';
import { createRgwObjectStore } from './rgw/object-store.ts';
import { createSimulatedDrivers } from './simulators/index.ts';

/** The simulated backends' tables, applied only where a simulator is chosen. */
const SIMULATOR_MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'simulators', 'migrations');
/** The rgw driver's record of which RGW bucket is which platform bucket. */
const RGW_MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rgw', 'migrations');

/** The migration folders the chosen drivers need beside the platform's own. */
export function driverMigrations(choice: Config['drivers']): string[] {
  return [
    ...(Object.values(choice).includes('simulator') ? [SIMULATOR_MIGRATIONS] : []),
    ...(choice.objectStore === 'rgw' ? [RGW_MIGRATIONS] : []),
  ];
}

/**
 * Builds the chosen drivers. `pool` is the backends' own connection pool (the simulators keep their
 * state in the database, on connections the API's requests never wait for).
 */
export function createDrivers(choice: Config['drivers'], pool: Pool, simulators: Config['simulators'], rgw?: Config['rgw']): Drivers {
  // Each choice is checked by loadConfig, so a new driver is one more case here, not a change of
  // the areas.
  const simulated = createSimulatedDrivers(pool, simulators);
  return {
    hypervisor: choice.compute === 'simulator' ? simulated.hypervisor : unreachable(choice.compute),
    objectStore: choice.objectStore === 'simulator' ? simulated.objectStore : createRgwObjectStore(pool, rgwSettings(rgw)),
    billing: choice.billing === 'simulator' ? simulated.billing : unreachable(choice.billing),
  };
}

function rgwSettings(rgw: Config['rgw']): RgwConfig {
  if (!rgw) throw new Error('OBJECT_STORE_DRIVER is rgw, but no RGW settings were loaded');
  return rgw;
}

function unreachable(choice: never): never {
  throw new Error(`no such driver: ${String(choice)}`);
}
