import type { BillingProviderDriver } from './billing-provider.ts';
import type { HypervisorDriver } from './hypervisor.ts';
import type { ObjectStoreDriver } from './object-store.ts';

/**
 * The external backends, each behind a small driver interface, each chosen by configuration
 * (`COMPUTE_DRIVER`, `OBJECT_STORE_DRIVER`, `BILLING_DRIVER`). The embedded default chooses the
 * simulators (drivers/simulators/): real code with latency and injectable faults.
 */
export interface Drivers {
  hypervisor: HypervisorDriver;
  objectStore: ObjectStoreDriver;
  billing: BillingProviderDriver;
}
