import { connect } from 'node:net';

/** A command QEMU answered with an error (its `class`, such as `GenericError`, and its description). */
export class QmpCommandError extends Error {
  readonly errorClass: string;

  constructor(command: string, errorClass: string, description: string) {
    super(`QMP ${command}: ${errorClass}: ${description}`);
    this.errorClass = errorClass;
  }
}

/** The monitor could not be reached or did not answer in time (no QEMU, or one that is going away). */
export class QmpUnavailableError extends Error {}

export interface QmpCommand {
  execute: string;
  arguments?: Record<string, unknown>;
}

/**
 * Runs commands on a QEMU's QMP monitor and returns their answers, in order. A connection is made
 * for each call and closed after it: QEMU's monitor takes one client at a time, and a server
 * process that holds none can be restarted, or run beside another, without handing one over.
 * The protocol is JSON lines: a greeting, `qmp_capabilities`, then one `return` or `error` per
 * command; events in between are skipped.
 */
export function qmp(socketPath: string, commands: QmpCommand[], timeoutMs = 5_000): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const answers: unknown[] = [];
    // -1: waiting for the greeting; 0: for qmp_capabilities; n: for commands[n - 1].
    let step = -1;
    let buffered = '';
    let settled = false;
    const finish = (error: Error | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(answers);
    };
    const timer = setTimeout(() => finish(new QmpUnavailableError(`QMP ${socketPath}: no answer within ${timeoutMs} ms`)), timeoutMs);
    const send = () => {
      const command = step === 0 ? { execute: 'qmp_capabilities' } : commands[step - 1]!;
      socket.write(`${JSON.stringify(command)}\n`);
    };
    socket.setEncoding('utf8');
    socket.on('error', (error) => finish(new QmpUnavailableError(`QMP ${socketPath}: ${error.message}`)));
    socket.on('close', () =>
      finish(new QmpUnavailableError(`QMP ${socketPath}: closed after ${answers.length} of ${commands.length} answers`)),
    );
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (!line) continue;
        let message: { QMP?: unknown; return?: unknown; error?: { class: string; desc: string }; event?: string };
        try {
          message = JSON.parse(line) as typeof message;
        } catch {
          return finish(new QmpUnavailableError(`QMP ${socketPath}: not JSON: ${line.slice(0, 100)}`));
        }
        if (message.event) continue;
        if (step === -1) {
          if (!message.QMP) return finish(new QmpUnavailableError(`QMP ${socketPath}: no greeting`));
        } else if (message.error) {
          const name = step === 0 ? 'qmp_capabilities' : commands[step - 1]!.execute;
          return finish(new QmpCommandError(name, message.error.class, message.error.desc));
        } else if (step > 0) {
          answers.push(message.return);
        }
        step += 1;
        if (step > commands.length) return finish(undefined);
        send();
      }
    });
  });
}

/** One command's answer. */
export async function qmpCommand<T>(socketPath: string, execute: string, args?: Record<string, unknown>, timeoutMs?: number): Promise<T> {
  const [answer] = await qmp(socketPath, [{ execute, ...(args ? { arguments: args } : {}) }], timeoutMs);
  return answer as T;
}

/** A human monitor command (hostfwd_add and hostfwd_remove have no QMP form): its output, which is empty on success. */
export async function hmpCommand(socketPath: string, commandLine: string): Promise<string> {
  return qmpCommand<string>(socketPath, 'human-monitor-command', { 'command-line': commandLine });
}
