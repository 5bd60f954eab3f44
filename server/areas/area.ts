import type { Server } from 'node:http';
import type { Router } from 'express';
import type { components } from '../../generated/openapi.ts';
import type { OperationHandlers, OperationId } from '../../generated/operations.ts';
import type { Config } from '../config.ts';
import type { AuditNames } from '../core/audit-names.ts';
import type { BackgroundTask } from '../core/background.ts';
import type { ApiActivity } from '../core/api-activity.ts';
import type { Clock } from '../core/clock.ts';
import type { RequestContext } from '../core/request-context.ts';
import type { OrganizationClock } from '../core/test-clocks.ts';
import type { DatabaseListener } from '../db/listener.ts';
import type { Pool, PoolClient, Queryable } from '../db/pool.ts';
import type { EmbeddedObjectStore } from '../drivers/embedded/store.ts';
import type { Drivers } from '../drivers/index.ts';
import type { OperationEngine } from '../engine/engine.ts';
import type { Executors } from '../engine/executor.ts';
import type { OperationType } from '../engine/operation-record.ts';
import type { Logger } from '../logging.ts';
import type { Metrics } from '../metrics.ts';
import type { CredentialCache } from './identity/credentials/credential-cache.ts';

export type { BackgroundTask };

/**
 * What every area is built from: the same value for every area (server/platform.ts builds it
 * once). What one area needs of another comes through `ports`, never by importing it.
 */
export interface AreaDependencies {
  pool: Pool;
  config: Config;
  clock: Clock;
  /** Each organization's time: the platform's clock, moved by a test clock when those are on. */
  orgClock: OrganizationClock;
  /** The address clients reach the platform at: PUBLIC_BASE_URL, else where it listens. */
  publicBaseUrl: () => string;
  log: Logger;
  metrics: Metrics;
  drivers: Drivers;
  /** The embedded object store when it is the chosen one (the storage area serves its S3 endpoint). */
  embeddedStore: EmbeddedObjectStore | undefined;
  /** The process's LISTEN connection: caches forget what other processes announce they changed. */
  listener: DatabaseListener;
  /** Credentials already verified, in this process; a change of one is announced to every process. */
  credentials: CredentialCache;
  /** What areas offer each other, bound once every area is built: read at run time, never while building. */
  ports: AreaPorts;
  /** How outside host names are resolved (webhook URLs): the system's resolver unless a test gives its own. */
  resolveHost?: (hostname: string) => Promise<string[]>;
  /** The API server's requests in flight, which parts beside the API yield to (absent: no API server). */
  apiActivity?: ApiActivity;
}

/** What one area offers the others, and the platform's own engine and usage sources, bound by the platform. */
export interface AreaPorts {
  /** The operations engine: it cancels queued work and says whether it runs. */
  engine: Pick<OperationEngine, 'cancelQueued' | 'running'>;
  /** Every area's billable resources and counters, for metering. */
  usageSources: readonly UsageSource[];
  /** The spend budget (billing): refuses new billable resources once month-to-date spend reaches it. */
  budget: BudgetGuard;
  /** The organization's object-storage figures (storage; null while not enrolled). */
  storageQuotaOf: StorageQuotaOf;
  /** Invented past usage, labelled demo in its invoices (billing), for a new organization that asks for it. */
  seedDemoHistory(tx: PoolClient, orgId: string, now: Date): Promise<void>;
  /** Metering and the billing run (billing), for the operator's test clock: accrue usage, then close finished months. */
  billingRun: { meter(orgIds?: string[]): Promise<void>; run(orgIds?: string[]): Promise<void> };
}

/** The ports areas provide (the engine and the usage sources are the platform's own). */
export type ProvidedPorts = Omit<AreaPorts, 'engine' | 'usageSources'>;

export type StorageQuotaOf = (db: Queryable, orgId: string) => Promise<components['schemas']['QuotaOut'] | null>;

/** A WebSocket endpoint an area serves on the API's own server (the console). */
export interface Upgrade {
  /** Takes the server's `upgrade` requests it recognises; the returned close ends its sessions. */
  attach(server: Server): { close(): void };
}

/** A part an area runs beside the API (the S3 endpoint), started once the API listens. */
export interface StartedPart {
  /** Where it listens. */
  url: string;
  close(): Promise<void>;
}

/**
 * An area, as the platform collects it: the handlers of its operations (each write with its audit
 * names, or it does not compile), the executors of its operation types, and its other faces.
 * server/platform.ts builds every area from one list with the same dependencies; an operation of
 * the contract without a handler, or an operation type without an executor, does not compile there.
 */
export interface Area<Ops extends OperationId = never, Types extends OperationType = never> {
  handlers: Pick<OperationHandlers<RequestContext>, Ops>;
  /** The audit action and resource of each operation that leaves audit events (every write; a read that hands out access). */
  auditNames: AuditNames<Ops>;
  executors: Executors<Types>;
  /** Loops that run in the background (reconcilers, schedulers, metering). */
  background?: BackgroundTask[];
  /** Billable resources the area runs, metered by the billing area. */
  usage?: UsageSource;
  /** Pages outside /v1 and the contract (the console page, invoice documents), served before routing. */
  pages?: Router[];
  /** WebSocket endpoints on the API's server. */
  upgrades?: Upgrade[];
  /** A part that runs beside the API (the S3 endpoint), started once the API listens; undefined: none here. */
  start?(): Promise<StartedPart | undefined>;
  /** What the area offers the others (see AreaPorts). */
  provides?: Partial<ProvidedPorts>;
}

/** A budget guard that asks the billing area's when called (ports are bound once every area is built). */
export function budgetOf(ports: Pick<AreaPorts, 'budget'>): BudgetGuard {
  return { assertCanCreateBillable: (db, orgId) => ports.budget.assertCanCreateBillable(db, orgId) };
}

/** An area's value, its operations inferred from its handlers (so that they are written once). */
export function defineArea<Ops extends OperationId = never, Types extends OperationType = never>(area: Area<Ops, Types>): Area<Ops, Types> {
  return area;
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
