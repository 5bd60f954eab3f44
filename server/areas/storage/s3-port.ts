import type { Queryable } from '../../db/pool.ts';
import type { S3Platform } from '../../drivers/embedded/s3/platform-port.ts';

/**
 * The storage area's answers to the S3 endpoint (drivers/embedded/s3/platform-port.ts), from the
 * platform's own records: an access key serves while it is `active` (a revoke stops it at the
 * request), a bucket while it is `active` (creating, deleting, soft-deleted or in error: not).
 */
export function s3Port(db: Queryable): S3Platform {
  return {
    async activeKey(accessKeyId) {
      const { rows } = await db.query<{ org_id: string; id: string }>(
        `SELECT org_id, id FROM s3_access_keys WHERE objectstore_access_key_id = $1 AND state = 'active'`,
        [accessKeyId],
      );
      return rows[0] && { orgId: rows[0].org_id, keyId: rows[0].id };
    },

    async activeBucketId(orgId, name) {
      const { rows } = await db.query<{ id: string }>(`SELECT id FROM buckets WHERE org_id = $1 AND name = $2 AND state = 'active'`, [
        orgId,
        name,
      ]);
      return rows[0]?.id;
    },

    async activeBucketIds(orgId) {
      const { rows } = await db.query<{ id: string }>(`SELECT id FROM buckets WHERE org_id = $1 AND state = 'active'`, [orgId]);
      return new Set(rows.map((row) => row.id));
    },
  };
}
