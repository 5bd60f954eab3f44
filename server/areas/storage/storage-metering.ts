import type { UsageSource } from '../area.ts';
import { BYTES_PER_BILLED_GB } from './storage-limits.ts';

/**
 * Stored bytes, metered as storage_gb_month: each bucket's rate is the GB it holds (at the
 * latest usage sample, previous versions and delete markers included); billing turns GB held
 * per hour into GB-months.
 */
export const storageUsage: UsageSource = {
  async meteredResources(db) {
    const { rows } = await db.query<{ org_id: string; id: string; usage_bytes: number }>(
      'SELECT org_id, id, usage_bytes FROM buckets WHERE usage_bytes > 0',
    );
    return rows.map((row) => ({
      orgId: row.org_id,
      resourceType: 'bucket',
      resourceId: row.id,
      ratesPerHour: { storage_gb_month: Number(row.usage_bytes) / BYTES_PER_BILLED_GB },
    }));
  },
};
