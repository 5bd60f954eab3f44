import type { Pool } from '../db/pool.ts';
import { withTransaction } from '../db/pool.ts';
import { recordAudit } from './audit.ts';
import type { Actor } from './principal.ts';

/** The settings an operator changes on an organization's row (each area reads its own). */
export type OrganizationSetting = 'max_buckets_override' | 'scheduling_enabled';

/**
 * Sets one setting of the organization, with its audit event (before and after), in one
 * transaction: the operator's changes (`npm run admin`). Returns the value before and the
 * organization's plan figure the output shows.
 */
export async function updateOrganizationSetting(
  pool: Pool,
  change: { orgId: string; setting: OrganizationSetting; value: unknown; action: string; actor: Actor },
): Promise<{ before: unknown; planMaxBuckets: number }> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ value: unknown }>(`SELECT ${change.setting} AS value FROM orgs WHERE id = $1 FOR UPDATE`, [
      change.orgId,
    ]);
    const updated = await tx.query<{ plan_max_buckets: number }>(
      `UPDATE orgs SET ${change.setting} = $2, updated_at = now() WHERE id = $1 RETURNING plan_max_buckets`,
      [change.orgId, change.value],
    );
    const before = rows[0]!.value;
    await recordAudit(tx, {
      orgId: change.orgId,
      action: change.action,
      resourceType: 'organization',
      resourceId: change.orgId,
      before: { [change.setting]: before },
      after: { [change.setting]: change.value },
      actor: change.actor,
      result: 'succeeded',
    });
    return { before, planMaxBuckets: updated.rows[0]!.plan_max_buckets };
  });
}
