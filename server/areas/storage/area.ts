// PLACEHOLDER until the storage area lands: answers every storage operation with 500.
import type { Area, AreaDependencies } from '../area.ts';
type StorageOperations = 'createBucket' | 'listBuckets' | 'getBucket' | 'deleteBucket' | 'setBucketQuota' | 'restoreBucket' | 'createAccessKey' | 'listAccessKeys' | 'revokeAccessKey' | 'getS3Quota' | 'setQuota';
export function storageArea(_deps: AreaDependencies): Area<StorageOperations> {
  const todo = async (): Promise<never> => { throw new Error('storage area not built yet'); };
  const names: StorageOperations[] = ['createBucket', 'listBuckets', 'getBucket', 'deleteBucket', 'setBucketQuota', 'restoreBucket', 'createAccessKey', 'listAccessKeys', 'revokeAccessKey', 'getS3Quota', 'setQuota'];
  const noop = { perform: todo, succeeded: todo, failed: todo, cancelled: todo };
  return {
    handlers: Object.fromEntries(names.map((name) => [name, todo])) as never,
    executors: Object.fromEntries(['bucket.create', 'bucket.delete', 'bucket.restore', 'bucket.quota', 'access_key.create', 'access_key.revoke'].map((type) => [type, noop])),
  };
}
