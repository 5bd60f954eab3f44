import type { Queryable } from '../../../db/pool.ts';

/** An organization as stored, with its object-storage enrollment. */
export interface OrganizationRow {
  id: string;
  name: string;
  enrollment_state: 'active' | 'suspended';
  created_at: Date;
  updated_at: Date;
}

export async function organizationById(db: Queryable, orgId: string): Promise<OrganizationRow | undefined> {
  const { rows } = await db.query<OrganizationRow>('SELECT id, name, enrollment_state, created_at, updated_at FROM orgs WHERE id = $1', [
    orgId,
  ]);
  return rows[0];
}
