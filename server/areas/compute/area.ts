// PLACEHOLDER until the compute area lands: answers every compute operation with 500.
import type { Area, AreaDependencies } from '../area.ts';
type ComputeOperations = 'listRegions' | 'listImages' | 'createVm' | 'listVms' | 'getVm' | 'deleteVm' | 'startVm' | 'stopVm' | 'rebootVm' | 'resizeVm' | 'rebuildVm' | 'rescueVm' | 'unrescueVm' | 'setVmProtection' | 'getVmFirewall' | 'setVmFirewall' | 'requestConsole' | 'collectConsole' | 'scheduleVmRestart' | 'listVmScheduledActions' | 'cancelScheduledAction' | 'listPublicIps' | 'allocatePublicIp' | 'getPublicIp' | 'releasePublicIp' | 'associatePublicIp' | 'disassociatePublicIp' | 'listSshKeys' | 'createSshKey' | 'deleteSshKey';
export function computeArea(_deps: AreaDependencies): Area<ComputeOperations> {
  const todo = async (): Promise<never> => { throw new Error('compute area not built yet'); };
  const names: ComputeOperations[] = ['listRegions', 'listImages', 'createVm', 'listVms', 'getVm', 'deleteVm', 'startVm', 'stopVm', 'rebootVm', 'resizeVm', 'rebuildVm', 'rescueVm', 'unrescueVm', 'setVmProtection', 'getVmFirewall', 'setVmFirewall', 'requestConsole', 'collectConsole', 'scheduleVmRestart', 'listVmScheduledActions', 'cancelScheduledAction', 'listPublicIps', 'allocatePublicIp', 'getPublicIp', 'releasePublicIp', 'associatePublicIp', 'disassociatePublicIp', 'listSshKeys', 'createSshKey', 'deleteSshKey'];
  const noop = { perform: todo, succeeded: todo, failed: todo, cancelled: todo };
  return {
    handlers: Object.fromEntries(names.map((name) => [name, todo])) as never,
    executors: Object.fromEntries(['vm.create', 'vm.start', 'vm.stop', 'vm.reboot', 'vm.resize', 'vm.rebuild', 'vm.rescue', 'vm.unrescue', 'vm.delete', 'vm.firewall', 'vm.console', 'ip.allocate', 'ip.associate', 'ip.disassociate', 'ip.release'].map((type) => [type, noop])),
  };
}
