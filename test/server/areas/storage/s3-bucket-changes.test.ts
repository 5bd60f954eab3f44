// Bucket changes through S3 (s3-bucket-changes.ts) on the embedded store. On Ceph's gateway: s3-bucket-changes.system.test.ts.
import { describe } from 'vitest';
import { storageDrivers } from './drivers.ts';
import { bucketChangeTests } from './s3-bucket-changes.ts';

describe.each(storageDrivers(['embedded']))('bucket changes through S3 on the $name store', bucketChangeTests);
