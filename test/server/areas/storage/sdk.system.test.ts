// The AWS SDK's tests of the data plane (sdk.ts) on Ceph's RADOS Gateway through the rgw driver, on
// a real single-node Ceph this file starts (skipped without Ceph, except in CI).
import { describe } from 'vitest';
import { storageDrivers } from './drivers.ts';
import { sdkTests } from './sdk.ts';

describe.each(storageDrivers(['rgw']))('the AWS SDK on the $name store', sdkTests);
