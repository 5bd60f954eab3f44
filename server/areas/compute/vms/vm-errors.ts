import { conflict, notFound, unprocessable, type FieldError } from '../../../core/errors.ts';

// The instances' named errors: the only place their status, code and title are chosen.

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
