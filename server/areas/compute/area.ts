import type { Area, AreaDependencies } from '../area.ts';
import { loadCatalogue } from './catalogue.ts';
import { catalogueHandlers } from './catalogue-handlers.ts';
import { publicIpExecutors, type PublicIpOperationType } from './public-ip-executors.ts';
import { publicIpHandlers } from './public-ip-handlers.ts';
import { createPublicIpService } from './public-ip-service.ts';
import { createReconciler } from './reconciler.ts';
import { scheduleHandlers, type ScheduleOperations } from './schedule-handlers.ts';
import { createScheduler } from './scheduler.ts';
import { createScheduleService } from './schedule-service.ts';
import { sshKeyHandlers } from './ssh-key-handlers.ts';
import { computeUsage } from './usage.ts';
import { vmExecutors, type VmOperationType } from './vm-executors.ts';
import { vmHandlers, type VmOperations } from './vm-handlers.ts';
import { createVmService } from './vm-service.ts';

export type ComputeOperations =
  | VmOperations
  | ScheduleOperations
  | 'listRegions'
  | 'listImages'
  | 'listPublicIps'
  | 'allocatePublicIp'
  | 'getPublicIp'
  | 'releasePublicIp'
  | 'associatePublicIp'
  | 'disassociatePublicIp'
  | 'listSshKeys'
  | 'createSshKey'
  | 'deleteSshKey';

/**
 * Compute: the catalogue (regions, images, pools, profiles from the catalogue file), instances
 * and their actions, public IPs, SSH keys, consoles and scheduled restarts, carried out by the
 * hypervisor driver through the operations engine. In the background, the reconciler records what
 * the hypervisor observes and the scheduler runs due restarts.
 */
export function computeArea(deps: AreaDependencies): Area<ComputeOperations, VmOperationType | PublicIpOperationType> {
  const { pool, config, orgClock, publicBaseUrl, drivers, budget } = deps;
  // A bad catalogue stops start-up here, with a message naming the file and the entry.
  const catalogue = loadCatalogue(config.catalogueFile);
  const maxAttempts = config.engine.maxAttempts;
  const vms = createVmService({ catalogue, budget, maxAttempts });
  const publicIps = createPublicIpService({ catalogue, budget, maxAttempts, vms });
  const schedules = createScheduleService(vms);
  const reconciler = createReconciler(pool, drivers.hypervisor);
  const scheduler = createScheduler({ pool, orgClock, vms });

  return {
    handlers: {
      ...vmHandlers({ pool, orgClock, publicBaseUrl, vms }),
      ...catalogueHandlers({ catalogue }),
      ...publicIpHandlers({ pool, publicIps }),
      ...sshKeyHandlers({ pool }),
      ...scheduleHandlers({ pool, orgClock, schedules }),
    },
    executors: {
      ...vmExecutors(pool, drivers.hypervisor, catalogue, orgClock),
      ...publicIpExecutors(pool, drivers.hypervisor),
    },
    usage: computeUsage,
    background: [
      {
        name: 'compute-reconciler',
        intervalMs: config.intervals.reconcileMs,
        run: async (signal) => void (await reconciler.reconcile(signal)),
      },
      { name: 'compute-scheduler', intervalMs: config.intervals.schedulerMs, run: async (signal) => void (await scheduler.runDue(signal)) },
    ],
  };
}
