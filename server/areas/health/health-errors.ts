import { DomainError } from '../../core/errors.ts';

export const notReady = (failures: string[]) =>
  new DomainError('unavailable', 'not_ready', 'Not ready', `Not ready: ${failures.join('; ')}.`);
