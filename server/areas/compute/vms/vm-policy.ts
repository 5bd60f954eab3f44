import type { components } from '../../../../generated/openapi.ts';

export type VmOut = components['schemas']['VmOut'];
export type VmAction = VmOut['allowed_actions'][number];
export type VmState = VmOut['state'];
export type DesiredState = VmOut['desired_state'];
export type DiskRedundancy = components['schemas']['RegionOut']['disk_redundancy'];

/** Rule 1: the vocabulary, in the order every list is returned in. */
export const VOCABULARY: readonly VmAction[] = [
  'start',
  'stop',
  'reboot',
  'console',
  'resize',
  'rebuild',
  'rescue',
  'unrescue',
  'delete',
  'firewall',
  'public_ip',
  'protection',
];

/**
 * allowed_actions, the policy (not the state) of an instance:
 * rule 2, a single-copy region allows start, stop, reboot, console; only start and console while
 * protected; rule 3, any other instance allows every action, minus delete while protected.
 */
export function allowedActions(vm: { disk_redundancy: DiskRedundancy; protected: boolean }): VmAction[] {
  if (vm.disk_redundancy === 'single_copy') return vm.protected ? SINGLE_COPY_PROTECTED : SINGLE_COPY;
  return vm.protected ? ALL_BUT_DELETE : ALL;
}

// The four possible answers, built once: a list of 100 instances asked for 100 new arrays. Frozen,
// since every instance shares them (typed mutable only because the generated VmOut says so).
const answer = (actions: VmAction[]) => Object.freeze(actions) as VmAction[];
const SINGLE_COPY_PROTECTED = answer(['start', 'console']);
const SINGLE_COPY = answer(['start', 'stop', 'reboot', 'console']);
const ALL_BUT_DELETE = answer(VOCABULARY.filter((action) => action !== 'delete'));
const ALL = answer([...VOCABULARY]);

/** Why an action is outside allowed_actions, for the message of vm_action_not_allowed. */
export function policyReason(vm: { disk_redundancy: DiskRedundancy; protected: boolean; protected_by: string | null }): string {
  if (vm.disk_redundancy === 'single_copy') {
    return vm.protected
      ? `it is in a single-copy region and protected${vm.protected_by === 'operator' ? ' by an operator' : ''}`
      : 'it is in a single-copy region';
  }
  return vm.protected ? 'it is protected' : 'the policy does not grant it';
}

/** States in which the instance's own operation is in flight. */
const TRANSITIONAL: ReadonlySet<VmState> = new Set(['creating', 'rebooting', 'resizing', 'rebuilding', 'deleting']);

/**
 * One change at a time: a change is in flight while the state is transitional, or while a start,
 * stop, rescue or unrescue has set desired_state and the state has not followed yet. An instance
 * in `error` has no change in flight (its desired_state is where it was going when it failed).
 */
export function changeInFlight(vm: { state: VmState; desired_state: DesiredState }): boolean {
  if (TRANSITIONAL.has(vm.state)) return true;
  return vm.state !== 'error' && vm.desired_state !== vm.state;
}

/** The actions that change an instance, and the states each accepts (when no change is in flight). */
export const ACCEPTED_STATES = {
  start: ['stopped'],
  stop: ['running', 'rescue'],
  reboot: ['running'],
  resize: ['running', 'stopped'],
  rebuild: ['running', 'stopped', 'error'],
  rescue: ['running', 'stopped'],
  unrescue: ['rescue'],
  delete: ['running', 'stopped', 'rescue', 'error'],
} as const satisfies Record<string, readonly VmState[]>;

export type StateChange = keyof typeof ACCEPTED_STATES;

/** "running", "running or rescue", "running, stopped or error". */
export function listWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}
