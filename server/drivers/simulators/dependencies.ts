import type { Pool } from '../../db/pool.ts';
import type { FaultInjector } from './faults.ts';

/** What every simulator is built from. */
export interface SimulatorDependencies {
  pool: Pool;
  latencyMs: [number, number];
  faults: FaultInjector;
}
