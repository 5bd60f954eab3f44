import { budgetOf, defineArea, type AreaDependencies } from '../area.ts';
import { catalogueHandlers } from './catalogue/catalogue-handlers.ts';
import { loadCatalogue } from './catalogue/catalogue.ts';
import { computeUsage } from './compute-metering.ts';
import { createConsoleGateway } from './console/console-gateway.ts';
import { consolePage } from './console/console-page.ts';
import { publicIpExecutors } from './public-ips/public-ip-executors.ts';
import { publicIpHandlers } from './public-ips/public-ip-handlers.ts';
import { createPublicIpService } from './public-ips/public-ip-service.ts';
import { scheduleHandlers } from './schedules/schedule-handlers.ts';
import { createScheduleService } from './schedules/schedule-service.ts';
import { createScheduler } from './schedules/scheduler.ts';
import { sshKeyHandlers } from './ssh-keys/ssh-key-handlers.ts';
import { vmExecutors } from './vms/vm-executors.ts';
import { vmHandlers } from './vms/vm-handlers.ts';
import { createReconciler } from './vms/vm-reconciler.ts';

/**
 * Compute: the catalogue (regions, images, pools, profiles from the catalogue file), instances
 * and their actions, public IPs, SSH keys, consoles and scheduled restarts, carried out by the
 * hypervisor driver through the operations engine. In the background, the reconciler records what
 * the hypervisor observes and the scheduler runs due restarts.
 */
export function computeArea({ pool, config, orgClock, publicBaseUrl, drivers, metrics, log, ports }: AreaDependencies) {
  // A bad catalogue stops start-up here, with a message naming the file and the entry.
  const catalogue = loadCatalogue(config.catalogueFile);
  const maxAttempts = config.engine.maxAttempts;
  const budget = budgetOf(ports);
  const vms = { catalogue, budget, maxAttempts };
  const publicIps = createPublicIpService({ catalogue, budget, maxAttempts });
  const schedules = createScheduleService();
  const reconciler = createReconciler(pool, drivers.hypervisor);
  const scheduler = createScheduler({ pool, orgClock, vms });

  return defineArea({
    handlers: {
      ...vmHandlers({ pool, orgClock, publicBaseUrl, vms }),
      ...catalogueHandlers({ catalogue }),
      ...publicIpHandlers({ pool, publicIps }),
      ...sshKeyHandlers({ pool }),
      ...scheduleHandlers({ pool, orgClock, schedules }),
    },
    auditNames: {
      createVm: { action: 'vm.create', resourceType: 'vm' },
      deleteVm: { action: 'vm.delete', resourceType: 'vm', idParam: 'vm_id' },
      startVm: { action: 'vm.start', resourceType: 'vm', idParam: 'vm_id' },
      stopVm: { action: 'vm.stop', resourceType: 'vm', idParam: 'vm_id' },
      rebootVm: { action: 'vm.reboot', resourceType: 'vm', idParam: 'vm_id' },
      resizeVm: { action: 'vm.resize', resourceType: 'vm', idParam: 'vm_id' },
      rebuildVm: { action: 'vm.rebuild', resourceType: 'vm', idParam: 'vm_id' },
      rescueVm: { action: 'vm.rescue', resourceType: 'vm', idParam: 'vm_id' },
      unrescueVm: { action: 'vm.unrescue', resourceType: 'vm', idParam: 'vm_id' },
      setVmProtection: { action: 'vm.set_protection', resourceType: 'vm', idParam: 'vm_id' },
      setVmFirewall: { action: 'vm.set_firewall', resourceType: 'vm', idParam: 'vm_id' },
      requestConsole: { action: 'vm.request_console', resourceType: 'vm', idParam: 'vm_id' },
      // A read that hands out access: its success is recorded, its refusal is not (reads never are).
      collectConsole: { action: 'vm.collect_console', resourceType: 'vm', idParam: 'vm_id' },
      scheduleVmRestart: { action: 'scheduled_action.create', resourceType: 'scheduled_action' },
      cancelScheduledAction: { action: 'scheduled_action.cancel', resourceType: 'scheduled_action', idParam: 'schedule_id' },
      allocatePublicIp: { action: 'public_ip.allocate', resourceType: 'public_ip' },
      releasePublicIp: { action: 'public_ip.release', resourceType: 'public_ip', idParam: 'public_ip_id' },
      associatePublicIp: { action: 'public_ip.associate', resourceType: 'public_ip', idParam: 'public_ip_id' },
      disassociatePublicIp: { action: 'public_ip.disassociate', resourceType: 'public_ip', idParam: 'public_ip_id' },
      createSshKey: { action: 'ssh_key.create', resourceType: 'ssh_key' },
      deleteSshKey: { action: 'ssh_key.delete', resourceType: 'ssh_key', idParam: 'ssh_key_id' },
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
        shared: true,
        run: async (signal) => void (await reconciler.reconcile(signal)),
      },
      { name: 'compute-scheduler', intervalMs: config.intervals.schedulerMs, run: async (signal) => void (await scheduler.runDue(signal)) },
    ],
    pages: [consolePage()],
    upgrades: [
      {
        // The console's WebSocket: collected console URLs connect here, on the API's own server.
        attach(server) {
          const gateway = createConsoleGateway({
            pool,
            orgClock,
            hypervisor: drivers.hypervisor,
            config: config.console,
            log: log.child({ component: 'console-gateway' }),
            countLimitClose: (why) => metrics.streamClosedForLimit('console', why),
          });
          gateway.attach(server);
          metrics.watchConsoleSessions(() => gateway.openSessions);
          return gateway;
        },
      },
    ],
  });
}
