// The storage behaviour (behaviour.ts) on the stores that run in the test process: the simulator
// and the embedded store. On Ceph's gateway: behaviour.system.test.ts.
import { describe } from 'vitest';
import { storageBehaviour } from './behaviour.ts';
import { storageDrivers } from './drivers.ts';

describe.each(storageDrivers(['simulator', 'embedded']))('object storage on the $name store', storageBehaviour);
