/**
 * A start stopped by a signal (Ctrl-C, SIGTERM) before it finished: each step of the start checks
 * for it (`signal.throwIfAborted()`) and gives up there, its parts undone, nothing more made.
 */
export class StartInterrupted extends Error {
  constructor(signal: string) {
    super(`the start was interrupted (${signal})`);
    this.name = 'StartInterrupted';
  }
}
