/**
 * How a backend call failed. Drivers translate whatever their backend says into one of these;
 * the backend's own message never travels further than the driver (it is logged at debug level
 * at most), so it can never reach a client.
 */
export type Backend = 'compute backend' | 'object store' | 'billing provider';

/** Worth retrying: a timeout, a 5xx, a dropped connection. */
export class TransientBackendError extends Error {
  readonly backend: Backend;

  constructor(backend: Backend, reason: string) {
    super(`${backend}: transient failure (${reason})`);
    this.backend = backend;
  }
}

/** Retrying will not help: the backend refused the request. */
export class PermanentBackendError extends Error {
  readonly backend: Backend;

  constructor(backend: Backend, reason: string) {
    super(`${backend}: refused (${reason})`);
    this.backend = backend;
  }
}
