import type { Queryable } from '../../../db/pool.ts';
import { updateRow } from '../../../db/update-row.ts';
import { columnsOf, prepared, runPrepared } from '../../../db/statements.ts';
import { iso, isoOrNull } from '../../../core/clock.ts';
import type { FirewallRuleSpec, InstalledSshKey, ServerReport } from '../../../drivers/hypervisor.ts';
import type { OperationFailure } from '../../../engine/executor.ts';
import { allowedActions, type DesiredState, type DiskRedundancy, type VmOut, type VmState } from './vm-policy.ts';
import { keysetVersions, listName, type Versioned } from '../../../core/pagination.ts';

/** A row of the vms table. */
export interface VmRow {
  id: string;
  org_id: string;
  name: string;
  region_id: string;
  disk_redundancy: DiskRedundancy;
  storage_pool_id: string;
  network_profile_id: string;
  image_id: string;
  image_name: string;
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
  state: VmState;
  desired_state: DesiredState;
  workload_type: VmOut['workload_type'];
  protected: boolean;
  protected_by: 'owner' | 'operator' | null;
  ssh_keys: InstalledSshKey[];
  user_data_present: boolean;
  labels: Record<string, string>;
  firewall: FirewallRuleSpec[];
  observed_status: VmOut['observed_status'];
  observed_addresses: VmOut['observed_addresses'];
  observed_at: Date | null;
  error_class: VmOut['error_class'];
  error_detail: string | null;
  powered_since: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** What an answer shows of an instance: a row without the columns only the platform reads. */
export type VmAnswerRow = Omit<VmRow, 'protected_by' | 'firewall' | 'powered_since' | 'deleted_at'>;

export function toVmOut(row: VmAnswerRow): VmOut {
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    region_id: row.region_id,
    storage_pool_id: row.storage_pool_id,
    network_profile_id: row.network_profile_id,
    image: { catalog_id: row.image_id, name: row.image_name },
    vcpus: row.vcpus,
    memory_mb: row.memory_mb,
    disk_gb: row.disk_gb,
    state: row.state,
    desired_state: row.desired_state,
    workload_type: row.workload_type,
    protected: row.protected,
    ssh_key_names: row.ssh_keys.map((key) => key.name),
    user_data_present: row.user_data_present,
    // The platform's infrastructure names are never given to customer instances.
    fqdn: null,
    observed_status: row.observed_status,
    observed_addresses: row.observed_addresses,
    observed_at: isoOrNull(row.observed_at),
    error_class: row.error_class,
    error_detail: row.error_detail,
    allowed_actions: allowedActions(row),
    labels: row.labels,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The columns of VmAnswerRow. */
const ANSWER_FIELDS: Record<keyof VmAnswerRow, true> = {
  id: true,
  org_id: true,
  name: true,
  region_id: true,
  disk_redundancy: true,
  storage_pool_id: true,
  network_profile_id: true,
  image_id: true,
  image_name: true,
  vcpus: true,
  memory_mb: true,
  disk_gb: true,
  state: true,
  desired_state: true,
  workload_type: true,
  protected: true,
  ssh_keys: true,
  user_data_present: true,
  labels: true,
  observed_status: true,
  observed_addresses: true,
  observed_at: true,
  error_class: true,
  error_detail: true,
  created_at: true,
  updated_at: true,
};

/**
 * What an answer reads (vm-answers.ts, for lists and for one instance): a hundred rows' firewall
 * rules (parsed as JSON), metering timestamps and the like were parsed for nothing.
 */
export const VM_ANSWER_COLUMNS = columnsOf<VmAnswerRow>(ANSWER_FIELDS);

/** Every column of a row of vms, for the prepared statements that read one. */
export const VM_COLUMNS = columnsOf<VmRow>({
  ...ANSWER_FIELDS,
  protected_by: true,
  firewall: true,
  powered_since: true,
  deleted_at: true,
});

const LIVE_VM = prepared('vm_live', `SELECT ${VM_COLUMNS} FROM vms WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`);
const LIVE_VM_LOCKED = prepared('vm_live_locked', `${LIVE_VM.text} FOR UPDATE`);
const ANY_VM = prepared('vm_any', `SELECT ${VM_COLUMNS} FROM vms WHERE org_id = $1 AND id = $2`);
const VM_BY_ID = prepared('vm_by_id', `SELECT ${VM_COLUMNS} FROM vms WHERE id = $1`);

/** A live instance of the organization (not deleted), optionally locked for a change. */
export async function findLiveVm(db: Queryable, orgId: string, vmId: string, lock = false): Promise<VmRow | undefined> {
  const { rows } = await runPrepared<VmRow>(db, lock ? LIVE_VM_LOCKED : LIVE_VM, [orgId, vmId]);
  return rows[0];
}

/** Any instance the organization ever had, deleted ones included. */
export async function findAnyVm(db: Queryable, orgId: string, vmId: string): Promise<VmRow | undefined> {
  const { rows } = await runPrepared<VmRow>(db, ANY_VM, [orgId, vmId]);
  return rows[0];
}

/**
 * Not a prepared statement: planned for each call, with its ids and the table as it is. A prepared
 * one's plan is made once per connection, and on a fresh database, while the table was empty, it
 * was a scan of the whole table: 3,669 rows read for five in the engine's first seconds (until
 * the first ANALYZE). Planning it costs a few dozen microseconds, once per batch of instances.
 */
const VMS_BY_IDS = `SELECT ${VM_COLUMNS} FROM vms WHERE id = ANY($1::uuid[])`;

/** Instances by id, in one query (`vmById` of many). */
export async function vmsByIds(db: Queryable, vmIds: string[]): Promise<Map<string, VmRow>> {
  const { rows } = await db.query<VmRow>(VMS_BY_IDS, [vmIds]);
  return new Map(rows.map((row) => [row.id, row]));
}

/** An instance by id only: executors work on the instance their operation names. */
export async function vmById(db: Queryable, vmId: string): Promise<VmRow | undefined> {
  const { rows } = await runPrepared<VmRow>(db, VM_BY_ID, [vmId]);
  return rows[0];
}

/** The columns a change may set: everything but identity, timestamps and observations. */
const CHANGEABLE: ReadonlyArray<keyof VmRow> = [
  'name',
  'region_id',
  'disk_redundancy',
  'storage_pool_id',
  'network_profile_id',
  'image_id',
  'image_name',
  'vcpus',
  'memory_mb',
  'disk_gb',
  'state',
  'desired_state',
  'workload_type',
  'protected',
  'protected_by',
  'ssh_keys',
  'user_data_present',
  'labels',
  'firewall',
  'error_class',
  'error_detail',
  'powered_since',
  'deleted_at',
];

/**
 * Applies desired fields (state, sizes, image, protection…) and bumps updated_at. Column names
 * come from this module's callers, never from a request.
 */
export async function updateVm(
  db: Queryable,
  vmId: string,
  changes: Partial<Omit<VmRow, 'id' | 'org_id' | 'observed_status' | 'observed_addresses' | 'observed_at'>>,
): Promise<VmRow> {
  return (await updateRow<VmRow>(db, 'vms', vmId, changes, CHANGEABLE))!;
}

/**
 * Records what the hypervisor reported. Observed fields are not desired ones: updated_at stays.
 * An older report never replaces a newer one; of two made in the same millisecond, the one an
 * operation got back from its own call wins over the reconciler's.
 */
export async function recordObservation(
  db: Queryable,
  vmId: string,
  report: ServerReport,
  source: 'operation' | 'reconciler',
): Promise<void> {
  await db.query(
    `UPDATE vms SET observed_status = $2, observed_addresses = $3, observed_at = $4
     WHERE id = $1 AND deleted_at IS NULL AND (observed_at IS NULL OR observed_at ${source === 'operation' ? '<=' : '<'} $4)`,
    [vmId, report.status, JSON.stringify(report.addresses), report.observedAt],
  );
}

/**
 * A finished creation in one statement: the instance is running, its failure cleared, and the
 * hypervisor's report recorded as `recordObservation` would (source 'operation'). Undefined when
 * the instance does not exist. Every SET expression reads the row as it was, so the report's
 * condition is the one `recordObservation` applies.
 */
export async function markCreated(db: Queryable, vmId: string, report: ServerReport): Promise<{ id: string } | undefined> {
  const { rows } = await db.query<{ id: string }>({
    name: 'vm-mark-created',
    text: `UPDATE vms SET state = 'running', error_class = NULL, error_detail = NULL, updated_at = now(),
             observed_status = CASE WHEN deleted_at IS NULL AND (observed_at IS NULL OR observed_at <= $3) THEN $2 ELSE observed_status END,
             observed_addresses = CASE WHEN deleted_at IS NULL AND (observed_at IS NULL OR observed_at <= $3) THEN $4::jsonb ELSE observed_addresses END,
             observed_at = CASE WHEN deleted_at IS NULL AND (observed_at IS NULL OR observed_at <= $3) THEN $3 ELSE observed_at END
           WHERE id = $1 RETURNING id`,
    values: [vmId, report.status, report.observedAt, JSON.stringify(report.addresses)],
  });
  return rows[0];
}

/**
 * The reconciler's reports of many instances, in one statement: as `recordObservation` with
 * source 'reconciler' for each (an older report never replaces a newer one).
 */
export async function recordObservations(db: Queryable, reports: ServerReport[]): Promise<void> {
  if (reports.length === 0) return;
  // The rows are locked by id, as every transaction that locks several instances does (see
  // engine/executor.ts lockingRows): joined straight to the reports, they were locked in whatever
  // order the join met them, and met an operation batch locking them in another (a deadlock).
  await db.query(
    `WITH reports AS (
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::timestamptz[]) AS r (id, status, addresses, observed_at)),
     locked AS (
       SELECT vms.id FROM vms JOIN reports r ON r.id = vms.id
       WHERE vms.deleted_at IS NULL AND (vms.observed_at IS NULL OR vms.observed_at < r.observed_at)
       ORDER BY vms.id FOR UPDATE OF vms)
     UPDATE vms SET observed_status = r.status, observed_addresses = r.addresses, observed_at = r.observed_at
     FROM reports r, locked
     WHERE vms.id = r.id AND vms.id = locked.id AND vms.deleted_at IS NULL AND (vms.observed_at IS NULL OR vms.observed_at < r.observed_at)`,
    [
      reports.map((report) => report.serverId),
      reports.map((report) => report.status),
      reports.map((report) => JSON.stringify(report.addresses)),
      reports.map((report) => report.observedAt),
    ],
  );
}

/**
 * Instances whose guest powered itself off (`poweroff` inside it): the hypervisor's word wins, as
 * with a cloud's "shutdown from inside stops the instance", and the instance is `stopped`
 * (desired too), so that metering, which follows `state`, stops counting time the guest does not
 * run. A `crashed` guest is left as it is: it still holds its place and a reboot recovers it.
 * Only an instance at rest in `running` or `rescue` is moved, and only by a report made after its
 * last change: a start that succeeded after the report was made is not undone.
 */
export async function settleUnrequestedStops(db: Queryable, reports: ServerReport[]): Promise<void> {
  const stopped = reports.filter((report) => report.status === 'stopped');
  if (stopped.length === 0) return;
  await db.query(
    `UPDATE vms SET state = 'stopped', desired_state = 'stopped', updated_at = now()
     FROM unnest($1::uuid[], $2::timestamptz[]) AS r (id, observed_at)
     WHERE vms.id = r.id AND vms.deleted_at IS NULL AND vms.state IN ('running', 'rescue') AND vms.desired_state = vms.state
       AND vms.updated_at < r.observed_at`,
    [stopped.map((report) => report.serverId), stopped.map((report) => report.observedAt)],
  );
}

/** The failure of the instance's latest operation, as the engine phrased it. */
export const failureFields = (failure: OperationFailure) => ({ error_class: failure.errorClass, error_detail: failure.errorDetail });

/** A later successful operation clears the failure of an earlier one. */
export const NO_FAILURE = { error_class: null, error_detail: null } as const;

/** An instance in a list: its id and the version of its row (PostgreSQL's `xmin`, new with every change). */
export type VmVersion = Versioned;

export interface VmFilters {
  region?: string;
  state?: string;
  /** `key:value` filters, split at the first colon. */
  labels: string[];
}

/** A page of the organization's instances: each one's id and row version (see VmAnswers for their answers). */
export function listVms(db: Queryable, orgId: string, filters: VmFilters, query: { cursor?: string; limit?: number }) {
  const labels = Object.fromEntries(
    filters.labels.map((label) => [label.slice(0, label.indexOf(':')), label.slice(label.indexOf(':') + 1)]),
  );
  const list = listName('vms', { region: filters.region ?? null, state: filters.state ?? null, labels: [...filters.labels].sort() });
  const page = { name: list, columns: 'id, xmin::text AS version, created_at', sortColumn: 'created_at', order: 'oldest first' } as const;
  // Unfiltered (a dashboard's list), one plan serves every organization: prepared.
  if (filters.region === undefined && filters.state === undefined && filters.labels.length === 0) {
    return keysetVersions(
      db,
      { ...page, from: 'vms WHERE org_id = $1 AND deleted_at IS NULL', params: [orgId], preparedAs: 'vms_page' },
      query,
    );
  }
  return keysetVersions(
    db,
    {
      ...page,
      from: `vms WHERE org_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR region_id = $2) AND ($3::text IS NULL OR state = $3) AND ($4::jsonb IS NULL OR labels @> $4::jsonb)`,
      // Without label filters the containment test is left out (null), rather than `@> '{}'`,
      // which the planner might try to answer from the labels index.
      params: [orgId, filters.region ?? null, filters.state ?? null, filters.labels.length > 0 ? JSON.stringify(labels) : null],
    },
    query,
  );
}
