// PLACEHOLDER until the storage area lands.
import type { components } from '../../../generated/openapi.ts';
import type { Queryable } from '../../db/pool.ts';
export async function storageQuotaOf(_db: Queryable, _orgId: string): Promise<components['schemas']['QuotaOut'] | null> {
  return null;
}
