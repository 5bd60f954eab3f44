// PLACEHOLDER until the compute area lands.
import type { HypervisorDriver } from '../hypervisor.ts';
import type { SimulatorDependencies } from './index.ts';
export function createHypervisorSimulator(_deps: SimulatorDependencies): HypervisorDriver {
  return {};
}
