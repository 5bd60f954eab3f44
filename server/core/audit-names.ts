import type { OperationId, operationRoutes } from '../../generated/operations.ts';
import type { AuditResourceType } from './audit.ts';

/** The audit action and resource of an operation's events; `idParam` names the path parameter of its resource. */
export interface AuditName {
  action: string;
  resourceType: AuditResourceType;
  idParam?: string;
}

/** The operations that change something (scope `write`): each leaves an audit event. */
export type WriteOperationId = {
  [Id in OperationId]: (typeof operationRoutes)[Id]['scope'] extends 'write' ? Id : never;
}[OperationId];

/**
 * The audit names of some operations (an area's): every write among them has one, or it does not
 * compile; a read may have one (a read that hands out access, such as collecting a console URL,
 * records its success). Events of the platform's own doing (a scheduled restart, a purge) name
 * theirs where they are recorded.
 */
export type AuditNames<Ops extends OperationId> = { [Id in Extract<Ops, WriteOperationId>]: AuditName } & {
  [Id in Exclude<Ops, WriteOperationId>]?: AuditName;
};

/** Every operation's audit names, as the platform collects them from the areas. */
export type AuditNameTable = Partial<Record<OperationId, AuditName>>;
