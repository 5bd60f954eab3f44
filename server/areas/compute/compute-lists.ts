import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/pool.ts';
import { decodeCursor, DEFAULT_PAGE_SIZE, keysetPage, page } from '../../core/pagination.ts';
import { compare } from './catalogue/catalogue.ts';
import type { PublicIpRow } from './public-ips/public-ip-rows.ts';
import type { ScheduleRow } from './schedules/schedule-rows.ts';
import type { SshKeyRow } from './ssh-keys/ssh-key-rows.ts';
import type { VmVersion } from './vms/vm-answers.ts';

// The lists of the compute area: oldest first (created_at, then id) for what customers create,
// id order for the catalogue. A cursor names its list and filters, so that a cursor of another
// list, or of the same list with other filters, is 400 invalid_cursor.

/** The name a cursor carries: the list and a digest of its filters. */
export function listName(list: string, filters: Record<string, unknown> = {}): string {
  const digest = createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 12);
  return `${list}:${digest}`;
}

/** A page of rows ordered by (created_at, id), oldest first, through the one pagination helper. */
function oldestFirst<Row extends { id: string }, Item>(
  db: Queryable,
  name: string,
  query: { cursor?: string; limit?: number },
  from: { table: string; where: string; params: unknown[]; columns?: string },
  toItem: (row: Row) => Item,
) {
  return keysetPage(
    db,
    {
      name,
      from: `${from.table} WHERE ${from.where}`,
      columns: from.columns,
      params: from.params,
      sortColumn: 'created_at',
      order: 'oldest first',
    },
    query,
    toItem,
  );
}

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
  return oldestFirst<VmVersion, VmVersion>(
    db,
    list,
    query,
    {
      table: 'vms',
      columns: 'id, xmin::text AS version, created_at',
      // Without label filters the containment test is left out (null), rather than `@> '{}'`,
      // which the planner might try to answer from the labels index.
      where: `org_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR region_id = $2) AND ($3::text IS NULL OR state = $3) AND ($4::jsonb IS NULL OR labels @> $4::jsonb)`,
      params: [orgId, filters.region ?? null, filters.state ?? null, filters.labels.length > 0 ? JSON.stringify(labels) : null],
    },
    ({ id, version }) => ({ id, version }),
  );
}

export function listPublicIps<Item>(
  db: Queryable,
  orgId: string,
  region: string | undefined,
  query: { cursor?: string; limit?: number },
  toItem: (row: PublicIpRow) => Item,
) {
  return oldestFirst<PublicIpRow, Item>(
    db,
    listName('public-ips', { region: region ?? null }),
    query,
    {
      table: 'public_ips',
      where: 'org_id = $1 AND released_at IS NULL AND ($2::text IS NULL OR region_id = $2)',
      params: [orgId, region ?? null],
    },
    toItem,
  );
}

export function listSshKeys<Item>(
  db: Queryable,
  orgId: string,
  query: { cursor?: string; limit?: number },
  toItem: (row: SshKeyRow) => Item,
) {
  return oldestFirst<SshKeyRow, Item>(
    db,
    listName('ssh-keys'),
    query,
    { table: 'ssh_keys', where: 'org_id = $1', params: [orgId] },
    toItem,
  );
}

export function listSchedules<Item>(
  db: Queryable,
  orgId: string,
  vmId: string,
  query: { cursor?: string; limit?: number },
  toItem: (row: ScheduleRow) => Item,
) {
  return oldestFirst<ScheduleRow, Item>(
    db,
    listName('scheduled-actions', { vm: vmId }),
    query,
    { table: 'scheduled_actions', where: 'org_id = $1 AND vm_id = $2', params: [orgId, vmId] },
    toItem,
  );
}

// Catalogue entries have no creation time: their cursors carry a fixed key and the entry's id.
const CATALOGUE_KEY = '1970-01-01T00:00:00.000000Z';

/** A page of catalogue entries (already in id order) after the cursor's id. */
export function catalogueListPage<Entry extends { id: string }, Item>(
  list: string,
  entries: Entry[],
  query: { cursor?: string; limit?: number },
  toItem: (entry: Entry) => Item,
) {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const after = decodeCursor(list, query.cursor, 'text');
  const rest = after ? entries.filter((entry) => compare(entry.id, after.id) > 0) : entries;
  return page(list, rest.slice(0, limit + 1), limit, (entry) => ({ key: CATALOGUE_KEY, id: entry.id }), toItem);
}
