// A throw-away single-node Ceph (start-single-node.sh) for tests and benchmarks, or an existing
// gateway named by the environment, and the settings that point the platform's rgw driver at it.
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

export interface SingleNodeCeph {
  /** The gateway's S3 and Admin Ops address. */
  endpoint: string;
  adminAccessKey: string;
  adminSecretKey: string;
  /** The environment that starts the platform with the rgw driver on this gateway. */
  env: Record<string, string>;
  /** Stops the cluster and removes its folder (nothing, for a gateway named by the environment). */
  stop(): Promise<void>;
}

const DAEMONS = ['ceph-mon', 'ceph-osd', 'radosgw', 'ceph', 'radosgw-admin'];

/**
 * Clusters this process started and has not stopped. The daemons run detached: should the process
 * end without stopping them (a test file that failed to start its server), they are stopped on exit.
 */
const running = new Set<string>();
let stopOnExit = false;
const stopScript = path.join(here, 'stop-single-node.sh');

/** Whether Debian's Ceph packages are installed (the daemons and tools the script runs). */
export function cephInstalled(): boolean {
  return DAEMONS.every((name) =>
    (process.env.PATH ?? '').split(':').some((dir) => {
      try {
        accessSync(path.join(dir, name), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    }),
  );
}

/**
 * A gateway to test against: the one CEPH_RGW_ENDPOINT, CEPH_RGW_ADMIN_ACCESS_KEY and
 * CEPH_RGW_ADMIN_SECRET_KEY name, or a new single-node cluster (two to three seconds).
 */
export async function startSingleNodeCeph(): Promise<SingleNodeCeph> {
  const named = process.env.CEPH_RGW_ENDPOINT;
  if (named) {
    const adminAccessKey = process.env.CEPH_RGW_ADMIN_ACCESS_KEY ?? '';
    const adminSecretKey = process.env.CEPH_RGW_ADMIN_SECRET_KEY ?? '';
    if (!adminAccessKey || !adminSecretKey)
      throw new Error('CEPH_RGW_ENDPOINT needs CEPH_RGW_ADMIN_ACCESS_KEY and CEPH_RGW_ADMIN_SECRET_KEY');
    return describe(named, adminAccessKey, adminSecretKey, async () => {});
  }
  let started: { stdout: string };
  try {
    started = await run(path.join(here, 'start-single-node.sh'), [], { maxBuffer: 1 << 20 });
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    throw new Error(`a single-node Ceph did not start: ${failed.stderr || failed.message}`, { cause: error });
  }
  const cluster = JSON.parse(started.stdout.trim().split('\n').at(-1)!) as {
    dir: string;
    rgw_endpoint: string;
    admin_access_key: string;
    admin_secret_key: string;
  };
  running.add(cluster.dir);
  if (!stopOnExit) {
    stopOnExit = true;
    process.once('exit', () => {
      for (const dir of running) execFileSync(stopScript, [dir], { stdio: 'ignore' });
    });
  }
  return describe(cluster.rgw_endpoint, cluster.admin_access_key, cluster.admin_secret_key, async () => {
    running.delete(cluster.dir);
    await run(stopScript, [cluster.dir]);
  });
}

function describe(endpoint: string, adminAccessKey: string, adminSecretKey: string, stop: () => Promise<void>): SingleNodeCeph {
  return {
    endpoint,
    adminAccessKey,
    adminSecretKey,
    env: {
      OBJECT_STORE_DRIVER: 'rgw',
      RGW_ENDPOINT: endpoint,
      RGW_ADMIN_ACCESS_KEY: adminAccessKey,
      RGW_ADMIN_SECRET_KEY: adminSecretKey,
    },
    stop,
  };
}
