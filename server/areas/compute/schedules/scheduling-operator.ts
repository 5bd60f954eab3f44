import { updateOrganizationSetting } from '../../../core/organization-settings.ts';
import type { Actor } from '../../../core/principal.ts';
import type { Pool } from '../../../db/pool.ts';

/**
 * The operator's switch of scheduled restarts (`npm run admin -- scheduling`): while off, new
 * schedules are refused (409 scheduling_disabled); existing ones can still be listed and cancelled.
 */
export async function setSchedulingEnabled(pool: Pool, change: { orgId: string; enabled: boolean; actor: Actor }) {
  await updateOrganizationSetting(pool, {
    orgId: change.orgId,
    setting: 'scheduling_enabled',
    value: change.enabled,
    action: 'org.set_scheduling',
    actor: change.actor,
  });
  return { org_id: change.orgId, scheduling_enabled: change.enabled };
}
