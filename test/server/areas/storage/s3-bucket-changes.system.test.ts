// Bucket changes through S3 (s3-bucket-changes.ts) on Ceph's RADOS Gateway through the rgw driver, on
// a real single-node Ceph this file starts (skipped without Ceph, except in CI).
import { describe } from 'vitest';
import { storageDrivers } from './drivers.ts';
import { bucketChangeTests } from './s3-bucket-changes.ts';

describe.each(storageDrivers(['rgw']))('bucket changes through S3 on the $name store', bucketChangeTests);
