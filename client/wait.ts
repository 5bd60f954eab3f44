// waitForOperation: polls an operation with backoff until it is finished.
import { OperationFailedError, OperationTimeoutError } from './errors.ts';
import { sleep } from './retry.ts';
import type { Operation, WaitOptions } from './types.ts';

const terminalStates: ReadonlySet<Operation['state']> = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Polls `getOperation` until the operation has finished (`finished_at` set): resolves with it when
 * it `succeeded`, rejects with OperationFailedError when it `failed` or was `cancelled`, with
 * OperationTimeoutError after `timeoutMs`, and with the signal's reason when `signal` aborts.
 */
export async function waitForOperation(
  getOperation: (operationId: string, signal: AbortSignal) => Promise<Operation>,
  operationOrId: Operation | string,
  options: WaitOptions = {},
): Promise<Operation> {
  const { timeoutMs = 600_000, signal, onProgress, initialIntervalMs = 500, maxIntervalMs = 5_000 } = options;
  const operationId = typeof operationOrId === 'string' ? operationOrId : operationOrId.id;
  let last = typeof operationOrId === 'string' ? undefined : operationOrId;

  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new OperationTimeoutError(operationId, timeoutMs, last)), timeoutMs);
  const stop = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
  try {
    for (let interval = initialIntervalMs; ; interval = Math.min(maxIntervalMs, interval * 2)) {
      const operation = await getOperation(operationId, stop);
      last = operation;
      onProgress?.(operation);
      if (operation.finished_at != null || terminalStates.has(operation.state)) {
        if (operation.state === 'succeeded') return operation;
        throw new OperationFailedError(operation);
      }
      await sleep(interval, stop);
    }
  } finally {
    clearTimeout(timer);
  }
}
