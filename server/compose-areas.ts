import type { OperationHandlers } from '../generated/operations.ts';
import type { Area, AreaDependencies, AreaPorts } from './areas/area.ts';
import { auditArea } from './areas/audit/area.ts';
import { billingArea } from './areas/billing/area.ts';
import { computeArea } from './areas/compute/area.ts';
import { eventsArea } from './areas/events/area.ts';
import { healthArea } from './areas/health/area.ts';
import { identityArea } from './areas/identity/area.ts';
import { operationsArea } from './areas/operations/area.ts';
import { storageArea } from './areas/storage/area.ts';
import type { AuditNameTable } from './core/audit-names.ts';
import type { RequestContext } from './core/request-context.ts';
import type { ExecutorRegistry } from './engine/executor.ts';

/** Every area of the platform: each is built from the same dependencies, and nothing else is listed by hand. */
const AREAS = [identityArea, computeArea, storageArea, billingArea, operationsArea, auditArea, eventsArea, healthArea] as const;

type BuiltArea = ReturnType<(typeof AREAS)[number]>;
// `any`: an area's operation types are read from its own type, whatever they are.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type OperationsOf<A> = A extends Area<infer Ops, any> ? Ops : never;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type TypesOf<A> = A extends Area<any, infer Types> ? Types : never;
type UnionToIntersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void ? I : never;

/**
 * Every area's handlers together, typed as what they hold: assigned to the generated
 * `OperationHandlers`, an operation of the contract that no area handles does not compile.
 */
type CollectedHandlers = UnionToIntersection<BuiltArea extends infer A ? Pick<OperationHandlers<RequestContext>, OperationsOf<A>> : never>;
type CollectedExecutors = Pick<ExecutorRegistry, TypesOf<BuiltArea>>;

/** The ports the platform checks are bound before anything runs (every key of AreaPorts, or it does not compile). */
const PORT_NAMES: Record<keyof AreaPorts, true> = {
  engine: true,
  usageSources: true,
  budget: true,
  storageQuotaOf: true,
  seedDemoHistory: true,
  billingRun: true,
};

export interface ComposedAreas {
  areas: readonly BuiltArea[];
  handlers: OperationHandlers<RequestContext>;
  executors: ExecutorRegistry;
  auditNames: AuditNameTable;
  /** What the areas offer each other, with the engine to bind once it is made from the executors. */
  ports: AreaPorts;
  /** Binds the engine (made from `executors`) and checks that every port is bound. */
  bindEngine(engine: AreaPorts['engine']): void;
}

/**
 * Builds every area with the same dependencies and collects what they hold: handlers, executors,
 * audit names, usage and the ports they offer each other. Used by the server (platform.ts) and
 * the operator's admin command, so that both run the same services.
 */
export function composeAreas(deps: Omit<AreaDependencies, 'ports'>): ComposedAreas {
  const ports = {} as AreaPorts;
  const areas = AREAS.map((build) => build({ ...deps, ports }));
  const handlers: OperationHandlers<RequestContext> = Object.assign({}, ...areas.map((area) => area.handlers)) as CollectedHandlers;
  const executors: ExecutorRegistry = Object.assign({}, ...areas.map((area) => area.executors)) as CollectedExecutors;
  const auditNames: AuditNameTable = {};
  for (const area of areas) Object.assign(auditNames, area.auditNames);
  Object.assign(ports, ...areas.map((area) => area.provides ?? {}), {
    usageSources: areas.flatMap((area) => (area.usage ? [area.usage] : [])),
  });
  return {
    areas,
    handlers,
    executors,
    auditNames,
    ports,
    bindEngine(engine) {
      ports.engine = engine;
      const unbound = Object.keys(PORT_NAMES).filter((name) => ports[name as keyof AreaPorts] === undefined);
      if (unbound.length > 0) throw new Error(`no area provides the ports ${unbound.join(', ')}`);
    },
  };
}
