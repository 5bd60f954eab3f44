import { randomUUID } from 'node:crypto';
// Payloads are JSON with exact integers: a spend budget of 2^63-1 stays exact.
import { stringify } from 'lossless-json';
import type { QueryConfig } from 'pg';
import type { components } from '../../generated/openapi.ts';
import type { Queryable } from '../db/pool.ts';

type Schemas = components['schemas'];

/** An event as the contract's webhooks section declares it, one member per payload schema. */
export type WebhookEvent =
  | Schemas['OperationEvent']
  | Schemas['InstanceStateChangedEvent']
  | Schemas['BudgetThresholdReachedEvent']
  | Schemas['InvoiceFinalizedEvent']
  | Schemas['ScheduleRestartMissedEvent']
  | Schemas['StorageQuotaWarningEvent']
  | Schemas['ApiKeyEvent']
  | Schemas['WebhookEndpointDisabledEvent']
  | Schemas['PingEvent'];

export type EventType = WebhookEvent['type'];

/** The schema of one event type (a schema may serve several: the three ends of an operation). */
type EventOf<Type extends EventType> = WebhookEvent extends infer Event
  ? Event extends { type: infer Types }
    ? Type extends Types
      ? Event
      : never
    : never
  : never;

/** An event to record: its type, what it is about, and the payload the contract declares for the type. */
export type NewEvent = {
  [Type in EventType]: {
    /** Given when the caller needs to know it (a ping's delivery names it); a new one otherwise. */
    id?: string;
    orgId: string;
    type: Type;
    resourceId: string;
    data: EventOf<Type>['data'];
  };
}[EventType];

/** The resource type of each event type (the contract's `resource_type` const of its schema). */
const RESOURCE_TYPES: { [Type in EventType]: EventOf<Type>['resource_type'] } = {
  'operation.succeeded': 'operation',
  'operation.failed': 'operation',
  'operation.cancelled': 'operation',
  'instance.state_changed': 'vm',
  'billing.budget_threshold_reached': 'billing',
  'invoice.finalized': 'invoice',
  'schedule.restart_missed': 'scheduled_action',
  'storage.quota_warning': 's3_quota',
  'api_key.created': 'api_token',
  'api_key.revoked': 'api_token',
  'webhook_endpoint.disabled': 'webhook_endpoint',
  ping: 'webhook_endpoint',
};

/** `evt_` and 32 hex digits (the trigger on vms writes the same form, migration 1000). */
export const newEventId = (): string => `evt_${randomUUID().replaceAll('-', '')}`;

/**
 * Whether events are recorded: always, but where the operator turned the log off to measure what
 * it costs (EVENT_LOG=false, `npm run bench`). Set once at start-up (platform.ts); the database's
 * own recorder, the trigger on vms, reads the same switch from its connection's settings.
 */
let recording = true;

export function setEventLogRecording(on: boolean): void {
  recording = on;
}

/**
 * The INSERT that writes events, its parameters numbered from `$${first}`: one statement for them
 * all, which the fan-out trigger turns into deliveries to the organization's webhook endpoints
 * (migration 1000). Also a part of another statement (the audit event's: core/audit.ts).
 */
export function eventsInsert(first: number): string {
  const [ids, orgs, types, resourceTypes, resourceIds, data] = [0, 1, 2, 3, 4, 5].map((offset) => `$${first + offset}`);
  return `INSERT INTO events (id, org_id, type, resource_type, resource_id, data)
          SELECT * FROM unnest(${ids}::text[], ${orgs}::uuid[], ${types}::text[], ${resourceTypes}::text[], ${resourceIds}::text[], ${data}::jsonb[])`;
}

/** The parameters of `eventsInsert` (undefined for none to write). */
export function eventsValues(events: readonly NewEvent[]): unknown[] | undefined {
  if (events.length === 0 || !recording) return undefined;
  return [
    events.map((event) => event.id ?? newEventId()),
    events.map((event) => event.orgId),
    events.map((event) => event.type),
    events.map((event) => RESOURCE_TYPES[event.type]),
    events.map((event) => event.resourceId),
    events.map((event) => stringify(event.data)),
  ];
}

/** The statement that writes events (undefined for none). */
export function eventsStatement(events: readonly NewEvent[]): QueryConfig | undefined {
  const values = eventsValues(events);
  return values && { name: 'events-insert', text: eventsInsert(1), values };
}

/**
 * Records events in the caller's transaction: the outbox. The one door through which the platform
 * announces what changed, called where each change commits, so that an event exists exactly when
 * its change does.
 */
export async function recordEvents(db: Queryable, events: readonly NewEvent[]): Promise<void> {
  const statement = eventsStatement(events);
  if (statement) await db.query(statement);
}
