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
  if (format === 'json') return pino(options);
  // Loaded only for a terminal: a server logging JSON (every deployment) never needs it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pino(
    options,
    pretty({ colorize: process.stdout.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', sync: true }),
  );
}
