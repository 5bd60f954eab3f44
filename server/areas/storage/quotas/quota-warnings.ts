import { recordEvents, type NewEvent } from '../../../core/events.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { softBytesOf } from '../storage-limits.ts';

/**
 * Announces measured usage reaching the ceiling's warning threshold (`soft_limit`, 90%) or the
 * ceiling itself (`ceiling`), in the reconciler's transaction that records the measurement. Each
 * level is announced once per ceiling, and again only after usage fell back below it (its notice
 * is then forgotten).
 */
export async function announceQuotaWarnings(tx: PoolClient, orgId: string, usageBytes: number, hardBytes: number): Promise<void> {
  const softBytes = softBytesOf(hardBytes);
  const levels = [
    ...(usageBytes >= softBytes ? (['soft_limit'] as const) : []),
    ...(usageBytes >= hardBytes ? (['ceiling'] as const) : []),
  ];
  await tx.query('DELETE FROM storage_quota_notices WHERE org_id = $1 AND NOT (hard_bytes = $2 AND level = ANY ($3::text[]))', [
    orgId,
    hardBytes,
    levels,
  ]);
  if (levels.length === 0) return;
  const { rows } = await tx.query<{ level: 'soft_limit' | 'ceiling' }>(
    `INSERT INTO storage_quota_notices (org_id, hard_bytes, level) SELECT $1, $2, unnest($3::text[])
     ON CONFLICT DO NOTHING RETURNING level`,
    [orgId, hardBytes, levels],
  );
  const events: NewEvent[] = rows.map(({ level }) => ({
    orgId,
    type: 'storage.quota_warning',
    resourceId: orgId,
    data: { level, usage_bytes: usageBytes, soft_bytes: softBytes, hard_bytes: hardBytes },
  }));
  await recordEvents(tx, events);
}
