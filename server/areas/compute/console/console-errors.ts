import { notFound } from '../../../core/errors.ts';

// The console's named errors: the only place their status, code and title are chosen.

export const consoleNotFound = (operationId: string) =>
  notFound(
    `No console to collect for operation ${operationId} on this instance: it is unknown, not succeeded yet, already collected, expired, or for another instance.`,
  );
