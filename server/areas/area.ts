import type { OperationHandlers } from '../../generated/operations.ts';
import type { Config } from '../config.ts';
import type { BackgroundTask } from '../core/background.ts';

export type { BackgroundTask };
import type { Clock } from '../core/clock.ts';
import type { OrganizationClock } from '../core/test-clocks.ts';
import type { RequestContext } from '../core/request-context.ts';
import type { Pool, Queryable } from '../db/pool.ts';
import type { Drivers } from '../drivers/index.ts';
import type { Executors } from '../engine/executor.ts';
import type { OperationType } from '../engine/operation-record.ts';
import type { Logger } from '../logging.ts';

/** What every area of the API is built from. */
export interface AreaDependencies {
  pool: Pool;
  config: Config;
  clock: Clock;
  /** Each organization's time: the platform's clock, moved by a test clock when those are on. */
  orgClock: OrganizationClock;
  /** The address clients reach the platform at: PUBLIC_BASE_URL, else where it listens. */
  publicBaseUrl: () => string;
  log: Logger;
  drivers: Drivers;
  /** The spend budget: refuses new billable resources once month-to-date spend reaches it. */
  budget: BudgetGuard;
}

/** An area: the handlers of its operations, executors of its operation types, and more. */
export interface Area<Operations extends keyof OperationHandlers<RequestContext>, Types extends OperationType = never> {
  handlers: Pick<OperationHandlers<RequestContext>, Operations>;
  executors: Executors<Types>;
  /** Billable resources the area runs, metered by the billing area. */
  usage?: UsageSource;
  /** Loops that run in the background (reconcilers, schedulers). */
  background?: BackgroundTask[];
}

export interface BudgetGuard {
  /** Throws 409 spend_budget_exceeded while month-to-date spend is at or above the budget. */
  assertCanCreateBillable(db: Queryable, orgId: string): Promise<void>;
}

/** One billable resource and its rates per hour, by meter (quantities in the meter's unit per hour). */
export interface MeteredResource {
  orgId: string;
  resourceType: string;
  resourceId: string;
  /** For example `{ vcpu_hour: 2, memory_gb_hour: 4, disk_gb_hour: 40 }` for a running 2-vCPU instance. */
  ratesPerHour: Partial<Record<Meter, number>>;
  /** An instance's size (such as `2 vCPU, 4 GB memory, 40 GB disk`): its hours are also counted by size. */
  size?: string;
}

/**
 * A cumulative counter a backend keeps for an organization (such as the bytes its object store
 * served): the meter accrues the counter's increase between readings, in units of `unitBytes`.
 */
export interface MeteredCounter {
  orgId: string;
  meter: Meter;
  /** The counter now (monotonic; a lower reading means the backend started counting again). */
  value: number;
  /** How many counted units make one unit of the meter (bytes per GB). */
  perMeterUnit: number;
}

export type Meter = 'vcpu_hour' | 'memory_gb_hour' | 'disk_gb_hour' | 'public_ip_hour' | 'storage_gb_month' | 'egress_gb';

export interface UsageSource {
  /** The resources that accrue usage right now, across organizations. */
  meteredResources(db: Queryable): Promise<MeteredResource[]>;
  /** Cumulative counters read from backends (outside any transaction), for these organizations or all. */
  meteredCounters?(db: Queryable, orgIds?: string[]): Promise<MeteredCounter[]>;
}
