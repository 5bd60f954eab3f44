import { updateOrganizationSetting } from '../../../core/organization-settings.ts';
import type { Actor } from '../../../core/principal.ts';
import type { Pool } from '../../../db/pool.ts';

/**
 * The operator's live override of the plan's bucket limit (`npm run admin -- set-plan`); null
 * goes back to the plan's. Counted by the bucket slots (quota-figures.ts) from the next request.
 */
export async function setPlanMaxBuckets(pool: Pool, change: { orgId: string; override: number | null; actor: Actor }) {
  const { planMaxBuckets } = await updateOrganizationSetting(pool, {
    orgId: change.orgId,
    setting: 'max_buckets_override',
    value: change.override,
    action: 'org.set_plan',
    actor: change.actor,
  });
  return {
    org_id: change.orgId,
    plan_max_buckets: planMaxBuckets,
    max_buckets_override: change.override,
    max_buckets: change.override ?? planMaxBuckets,
  };
}
