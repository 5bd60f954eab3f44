import type { ObjectStoreDriver } from '../../drivers/object-store.ts';
import type { MeteredCounter, UsageSource } from '../area.ts';
import { BYTES_PER_BILLED_GB } from './storage-limits.ts';

/**
 * Egress, metered as egress_gb: the object store counts the bytes it served to each
 * organization's clients (`egressBytes`, cumulative); billing accrues its increase between
 * readings. Read for every organization that has ever had a bucket.
 */
export function egressCounters(objectStore: ObjectStoreDriver): NonNullable<UsageSource['meteredCounters']> {
  return async (db, orgIds) => {
    const { rows } = await db.query<{ org_id: string }>(
      orgIds ? 'SELECT DISTINCT org_id FROM buckets WHERE org_id = ANY($1::uuid[])' : 'SELECT DISTINCT org_id FROM buckets',
      orgIds ? [orgIds] : [],
    );
    const counters: MeteredCounter[] = [];
    for (const { org_id: orgId } of rows) {
      try {
        const report = await objectStore.describeOrganization(orgId);
        counters.push({ orgId, meter: 'egress_gb', value: report.egressBytes, perMeterUnit: BYTES_PER_BILLED_GB });
      } catch {
        // The store did not answer for this organization: its increase is counted at the next
        // reading (the counter is cumulative), and the rest of metering goes on.
      }
    }
    return counters;
  };
}
