// Ceph for the storage tests: whether the rgw driver can be tested here, and a gateway to test it
// on. In CI (CI=true) a missing Ceph is a failure, never a silent skip: `.ci/run` installs it.
import { cephInstalled, startSingleNodeCeph, type SingleNodeCeph } from '../../scripts/ceph/single-node.ts';

export type { SingleNodeCeph };

/** What a run without Ceph says about the rgw tests it leaves out. */
export const CEPH_MISSING =
  'rgw store: skipped, Ceph is not installed here (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common, ' +
  'or CEPH_RGW_ENDPOINT; with CI=true this is a failure)';

/**
 * Whether the rgw driver's tests run: Ceph installed, or a gateway named by CEPH_RGW_ENDPOINT.
 * Without either, locally, they are skipped and the run says so; in CI they fail.
 */
export function rgwTestable(): boolean {
  if (process.env.CEPH_RGW_ENDPOINT || cephInstalled()) return true;
  if (process.env.CI === 'true' || process.env.CI === '1') {
    throw new Error(
      'CI runs the object-storage tests on Ceph, and Ceph is not installed: ' +
        'apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common (.ci/run does it)',
    );
  }
  console.warn(CEPH_MISSING);
  return false;
}

/** A single-node Ceph for a test file (or the gateway CEPH_RGW_ENDPOINT names); stop it in afterAll. */
export const startCeph = (): Promise<SingleNodeCeph> => startSingleNodeCeph();
