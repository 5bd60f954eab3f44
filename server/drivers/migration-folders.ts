// The migration folders of the drivers, apart from the drivers themselves: main.ts migrates while
// the rest of the server loads, and must not load every driver to know where their tables are.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.ts';

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
