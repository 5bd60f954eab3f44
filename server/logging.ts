import { pino, type Logger, type LoggerOptions } from 'pino';
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';

export type { Logger };

/**
 * Structured logs: JSON lines for machines, or (`pretty`, the default on a terminal) one readable
 * line per entry with its fields. Credentials never reach a log line: request headers are not logged, and
 * the redaction paths below catch secrets should an object holding one be logged by mistake.
 */
export function createLogger(level: string, format: 'json' | 'pretty' = 'json'): Logger {
  const options: LoggerOptions = {
    level,
    base: { service: 'cloud-platform-api' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'authorization',
        '*.authorization',
        'headers.authorization',
        'secret',
        '*.secret',
        'api_key',
        '*.api_key',
        'secret_access_key',
        '*.secret_access_key',
        'password',
        '*.password',
        'token',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  if (format === 'json') return pino(options, standardOutput());
  // Loaded only for a terminal: a server logging JSON (every deployment) never needs it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pino(
    options,
    pretty({ colorize: process.stdout.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', sync: true }),
  );
}

/**
 * Standard output, written off the request path: a line is handed to a write made by libuv's
 * thread pool, and the lines logged while one write is under way go out together in the next,
 * instead of one blocking write(2) per line on the thread that serves requests (a few percent of
 * a request's CPU). pino writes what is pending synchronously when the process exits, a crash
 * included; only a SIGKILL can lose the lines of the write under way. A reader that stops
 * reading holds at most 16 MiB of lines; the rest are dropped rather than stalling the server.
 */
function standardOutput() {
  return pino.destination({ dest: 1, sync: false, maxLength: 16 * 1024 * 1024 });
}
