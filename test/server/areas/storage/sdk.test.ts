// The AWS SDK's tests of the data plane (sdk.ts) on the embedded store. On Ceph's gateway: sdk.system.test.ts.
import { describe } from 'vitest';
import { storageDrivers } from './drivers.ts';
import { sdkTests } from './sdk.ts';

describe.each(storageDrivers(['embedded']))('the AWS SDK on the $name store', sdkTests);
