import type { SimulatorConfig } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import type { Drivers } from '../index.ts';
import { createBillingProviderSimulator } from './billing-provider.ts';
import type { SimulatorDependencies } from './dependencies.ts';
import { FaultInjector, parseFaultRules } from './faults.ts';
import { createHypervisorSimulator } from './hypervisor.ts';
import { createObjectStoreSimulator } from './object-store.ts';

/** The simulated backends of the embedded default: real code, with latency and faults, on connections of their own. */
export function createSimulatedDrivers(pool: Pool, config: SimulatorConfig): Drivers {
  const dependencies: SimulatorDependencies = {
    pool,
    latencyMs: config.latencyMs,
    faults: new FaultInjector(pool, parseFaultRules(config.faults)),
  };
  return {
    hypervisor: createHypervisorSimulator(dependencies),
    objectStore: createObjectStoreSimulator(dependencies),
    billing: createBillingProviderSimulator(dependencies),
  };
}
