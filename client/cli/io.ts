// What a command is given to talk to the world, and the exit codes it answers with.

export const EXIT = { ok: 0, usage: 1, refused: 2, unavailable: 3, failed: 4, cancelled: 5, waitTimeout: 6 } as const;

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** All of standard input (for `--body -`). */
  stdin: () => string;
  /** Asks a question on stderr and reads one line of standard input (undefined at its end); `secret`: without echo. */
  ask: (question: string, options?: { secret?: boolean }) => Promise<string | undefined>;
  /** Standard error is a terminal (a live progress line). */
  isTty: boolean;
  /**
   * Ends a command that runs until it is interrupted (`events listen`), as Ctrl-C does: for a
   * program that runs the CLI in its own process, where SIGINT is its own.
   */
  interrupted?: AbortSignal;
}

/**
 * The client's calls by an operationId known only at run time: the CLI's commands come from the
 * contract document, so their requests are checked by the server's validation, not by these types.
 */
export interface UntypedClient {
  call(operationId: string, init?: unknown): Promise<unknown>;
  paginate(operationId: string, init?: unknown): AsyncGenerator<Record<string, unknown>, void, undefined>;
}
