// Calls from one thread to an object of another, over a MessagePort: the S3 endpoint's thread asks
// the main thread for what only the main thread can do (a bucket change goes through the platform's
// services, which reach other areas). Arguments and results are structured-cloned (Dates, Sets and
// Maps survive). Errors cross as data and are made again on the calling side: a DomainError as a
// DomainError, anything else as an Error keeping `code` and `syscall`, so that an outage (a
// refused connection, SQLSTATE 08006) and a collision (40P01) are still recognised there. Whether
// the database was unavailable, or the error a query's, is judged where it happened and crosses
// too: a wrapper's cause does not (a reset under a connection-cutting test was answered 500).
import type { MessagePort } from 'node:worker_threads';
import { DomainError, type RefusalKind } from './errors.ts';
import type { FieldError } from './errors.ts';
import { isDatabaseError, isDatabaseUnavailable, markDatabaseError, markDatabaseUnavailable } from '../db/unavailable.ts';

type AsyncMethods<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => Promise<R> : never };

interface Call {
  id: number;
  method: string;
  args: unknown[];
}

interface CrossedError {
  message: string;
  code?: string;
  syscall?: string;
  databaseUnavailable?: boolean;
  databaseError?: boolean;
  domain?: { kind: RefusalKind; code: string; title: string; detail: string; fieldErrors?: FieldError[] };
}

type Answer = { id: number; value: unknown } | { id: number; error: CrossedError };

function crossed(error: unknown): CrossedError {
  if (error instanceof DomainError) {
    const { kind, code, title, detail, fieldErrors } = error;
    return { message: error.message, domain: { kind, code, title, detail, ...(fieldErrors && { fieldErrors }) } };
  }
  const { message, code, syscall } = (error ?? {}) as { message?: unknown; code?: unknown; syscall?: unknown };
  return {
    message: typeof message === 'string' ? message : String(error),
    ...(typeof code === 'string' && { code }),
    ...(typeof syscall === 'string' && { syscall }),
    ...(isDatabaseUnavailable(error) && { databaseUnavailable: true }),
    ...(isDatabaseError(error) && { databaseError: true }),
  };
}

function remade(error: CrossedError): Error {
  if (error.domain) {
    const { kind, code, title, detail, fieldErrors } = error.domain;
    return new DomainError(kind, code, title, detail, fieldErrors);
  }
  const made = Object.assign(new Error(error.message), error.code && { code: error.code }, error.syscall && { syscall: error.syscall });
  if (error.databaseUnavailable) markDatabaseUnavailable(made);
  if (error.databaseError) markDatabaseError(made);
  return made;
}

/** Answers the calls that arrive on `port` with `target`'s methods of these names (no other). */
export function answerCalls<T extends object>(port: MessagePort, target: T, methods: ReadonlyArray<keyof T & string>): void {
  const allowed = new Set<string>(methods);
  port.on('message', (call: Call) => {
    const method = allowed.has(call.method) ? (target as Record<string, unknown>)[call.method] : undefined;
    const answered =
      typeof method === 'function'
        ? Promise.resolve().then(() => (method as (...args: unknown[]) => Promise<unknown>).apply(target, call.args))
        : Promise.reject(new Error(`no method ${call.method} is answered here`));
    answered.then(
      (value) => port.postMessage({ id: call.id, value } satisfies Answer),
      (error: unknown) => port.postMessage({ id: call.id, error: crossed(error) } satisfies Answer),
    );
  });
}

/**
 * The methods of an object of another thread, as async functions that post a call on `port` and
 * resolve with its answer. Calls still waiting when the port closes are rejected.
 */
export function callsTo<T extends object, K extends keyof T & string>(port: MessagePort, methods: readonly K[]): Pick<AsyncMethods<T>, K> {
  let nextId = 0;
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  port.on('message', (answer: Answer) => {
    const call = waiting.get(answer.id);
    if (!call) return;
    waiting.delete(answer.id);
    if ('error' in answer) call.reject(remade(answer.error));
    else call.resolve(answer.value);
  });
  port.on('close', () => {
    for (const call of waiting.values()) call.reject(new Error('the other thread is gone'));
    waiting.clear();
  });
  const calls: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const method of methods) {
    calls[method] = (...args) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        port.postMessage({ id, method, args } satisfies Call);
      });
  }
  return calls as Pick<AsyncMethods<T>, K>;
}
