import { conflict, notFound, unprocessable, type FieldError } from '../../../core/errors.ts';

// The compute area's named errors: the only place their status, code and title are chosen.

/** A short name for an instance in messages: `<id> (<name>)`. */
const label = (vm: { id: string; name: string }) => `${vm.id} (${vm.name})`;

export const vmNotFound = (vmId: string) => notFound(`No instance ${vmId} in this organization.`);

export const vmActionNotAllowed = (vm: { id: string; name: string }, action: string, reason: string, allowed: readonly string[]) =>
  conflict(
    'vm_action_not_allowed',
    'Action not allowed',
    `The action ${action} is not allowed for instance ${label(vm)}: ${reason}; its allowed_actions are ${allowed.length > 0 ? allowed.join(', ') : 'none'}.`,
  );

export const vmStateConflict = (detail: string) => conflict('vm_state_conflict', 'Instance state conflict', detail);

export const vmProtected = (vm: { id: string; name: string }, byOperator: boolean) =>
  conflict(
    'vm_protected',
    'Instance is protected',
    byOperator
      ? `Instance ${label(vm)} is protected by an operator; contact support to delete it.`
      : `Instance ${label(vm)} is protected; switch protection off before deleting it.`,
  );

export const vmNameTaken = (name: string, regionId: string) =>
  conflict(
    'vm_name_taken',
    'Instance name taken',
    `A live instance named ${name} already exists in region ${regionId}; choose another name or delete that instance first.`,
  );

export const userDataUnsupported = () =>
  unprocessable(
    'user_data_unsupported',
    'User data not supported',
    'User data is not supported for this organization; omit user_data or send null.',
    [{ pointer: '/user_data', detail: 'must be omitted or null' }],
  );

export const workloadNotAllowed = () =>
  unprocessable(
    'workload_not_allowed',
    'Workload type not allowed',
    'A customer organization may only create customer workloads; leave workload_type unset.',
    [{ pointer: '/workload_type', detail: 'only customer is allowed' }],
  );

export const imageRequirementsNotMet = (detail: string, errors: FieldError[]) =>
  unprocessable('image_requirements_not_met', 'Image requirements not met', detail, errors);

export const diskShrinkNotAllowed = (vm: { id: string; name: string; disk_gb: number }) =>
  unprocessable(
    'disk_shrink_not_allowed',
    'Disk shrink not allowed',
    `Instance ${label(vm)} has a ${vm.disk_gb} GB disk; a disk can grow or stay, never shrink.`,
    [{ pointer: '/disk_gb', detail: `must be at least ${vm.disk_gb} (the current disk_gb)` }],
  );

export const publicIpNotFound = (publicIpId: string) => notFound(`No public IP ${publicIpId} in this organization.`);

export const publicIpStateConflict = (detail: string) => conflict('public_ip_state_conflict', 'Public IP state conflict', detail);

export const publicIpRegionMismatch = (ip: { id: string; region_id: string }, vm: { id: string; region_id: string }) =>
  unprocessable(
    'public_ip_region_mismatch',
    'Public IP in another region',
    `Public IP ${ip.id} is in ${ip.region_id} but instance ${vm.id} is in ${vm.region_id}; allocate a public IP in ${vm.region_id}.`,
    [{ pointer: '/vm_id', detail: `instance is in region ${vm.region_id}, the public IP in ${ip.region_id}` }],
  );

export const sshKeyNameTaken = (name: string) =>
  conflict(
    'ssh_key_name_taken',
    'SSH key name taken',
    `The organization already has an SSH key named ${name}; choose another name or delete that key first.`,
  );

export const sshKeyNotFound = (sshKeyId: string) => notFound(`No SSH key ${sshKeyId} in this organization.`);

export const schedulingDisabled = () =>
  conflict(
    'scheduling_disabled',
    'Scheduling is disabled',
    'Scheduled restarts are disabled for this organization; existing schedules can still be listed and cancelled.',
  );

export const scheduleNotFound = (scheduleId: string) => notFound(`No scheduled restart ${scheduleId} in this organization.`);

export const scheduledActionStateConflict = (scheduleId: string, state: 'completed' | 'cancelled') =>
  conflict(
    'scheduled_action_state_conflict',
    'Scheduled restart is not active',
    state === 'cancelled'
      ? `Scheduled restart ${scheduleId} is already cancelled.`
      : `Scheduled restart ${scheduleId} is completed; only a scheduled one can be cancelled.`,
  );

export const consoleNotFound = (operationId: string) =>
  notFound(
    `No console to collect for operation ${operationId} on this instance: it is unknown, not succeeded yet, already collected, expired, or for another instance.`,
  );

export const regionNotFound = (regionId: string) => notFound(`No region ${regionId}; list the regions with listRegions.`);
