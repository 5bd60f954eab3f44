import type { components } from '../../../../generated/openapi.ts';
import { iso } from '../../../core/clock.ts';
import type { Queryable } from '../../../db/pool.ts';
import { updateRow } from '../../../db/update-row.ts';
import { listName, oldestFirst } from '../../../core/pagination.ts';

type PublicIpOut = components['schemas']['PublicIpOut'];
export type PublicIpState = PublicIpOut['state'];

export interface PublicIpRow {
  id: string;
  org_id: string;
  region_id: string;
  address: string | null;
  state: PublicIpState;
  vm_id: string | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  released_at: Date | null;
}

export const toPublicIpOut = (row: PublicIpRow): PublicIpOut => ({
  id: row.id,
  region_id: row.region_id,
  address: row.address,
  state: row.state,
  vm_id: row.vm_id,
  error: row.error,
  created_at: iso(row.created_at),
});

export async function findPublicIp(db: Queryable, orgId: string, publicIpId: string, lock = false): Promise<PublicIpRow | undefined> {
  const { rows } = await db.query<PublicIpRow>(
    `SELECT * FROM public_ips WHERE org_id = $1 AND id = $2 AND released_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    [orgId, publicIpId],
  );
  return rows[0];
}

export async function updatePublicIp(
  db: Queryable,
  id: string,
  changes: Partial<Pick<PublicIpRow, 'address' | 'state' | 'vm_id' | 'error' | 'released_at'>>,
): Promise<PublicIpRow> {
  return (await updateRow<PublicIpRow>(db, 'public_ips', id, changes, ['address', 'state', 'vm_id', 'error', 'released_at']))!;
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
