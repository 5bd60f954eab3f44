import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Credentials never reach a log line: request headers are not logged, and
 * the redaction paths below catch secrets should an object holding one be logged by mistake.
 */
export function createLogger(level: string): Logger {
  return pino({
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
  });
}
