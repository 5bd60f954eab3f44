import { conflict, notFound } from '../../../core/errors.ts';

// The scheduled restarts' named errors: the only place their status, code and title are chosen.

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
