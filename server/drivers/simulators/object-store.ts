// PLACEHOLDER until the storage area lands.
import type { ObjectStoreDriver } from '../object-store.ts';
import type { SimulatorDependencies } from './index.ts';
export function createObjectStoreSimulator(_deps: SimulatorDependencies): ObjectStoreDriver {
  return {};
}
