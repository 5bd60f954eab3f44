// The storage behaviour (behaviour.ts) on Ceph's RADOS Gateway through the rgw driver, on a real
// single-node Ceph this file starts (skipped without Ceph, except in CI).
import { describe } from 'vitest';
import { storageBehaviour } from './behaviour.ts';
import { storageDrivers } from './drivers.ts';

describe.each(storageDrivers(['rgw']))('object storage on the $name store', storageBehaviour);
