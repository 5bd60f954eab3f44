import type { BillingProviderDriver } from './billing-provider.ts';
import type { HypervisorDriver } from './hypervisor.ts';
import type { ObjectStoreDriver } from './object-store.ts';

/**
 * The external backends, each behind a small driver interface. The embedded default uses
 * simulators (drivers/simulators/) with configurable latency and injectable faults.
 */
export interface Drivers {
  hypervisor: HypervisorDriver;
  objectStore: ObjectStoreDriver;
  billing: BillingProviderDriver;
}
