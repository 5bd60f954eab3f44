import { pino, type Logger, type LoggerOptions } from 'pino';
import { writeSync } from 'node:fs';
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

/** Lines wait for this many bytes, or for FLUSH_INTERVAL_MS, before they are written out together. */
const BATCH_BYTES = 8 * 1024;
const FLUSH_INTERVAL_MS = 100;
const STDOUT = 1;

type Destination = ReturnType<typeof pino.destination>;

/** The process's one batched standard output, made by the first logger that needs it. */
let sharedStandardOutput: Destination | undefined;

/**
 * Standard output, written in batches off the request path: lines gather up to 8 KiB (or 100 ms)
 * and go out in one write made by libuv's thread pool, instead of one blocking write(2) per line
 * on the thread that serves requests (a few percent of a request's CPU, one request line each).
 * pino writes what is pending synchronously when the process exits, a crash included; only a
 * SIGKILL can lose the last 100 ms of lines. A reader that stops reading holds at most 16 MiB of
 * lines; the rest are dropped rather than stalling the server.
 *
 * One per process, whatever the number of loggers: a test process makes one for each platform it
 * starts, and each destination made its own flush timer and its own listener on process.stdout,
 * never removed (Node's MaxListenersExceededWarning in every test run, from the eleventh).
 */
function standardOutput(): Destination {
  sharedStandardOutput ??= batchedStandardOutput();
  return sharedStandardOutput;
}

function batchedStandardOutput(): Destination {
  const destination = pino.destination({ dest: STDOUT, sync: false, minLength: BATCH_BYTES, maxLength: 16 * 1024 * 1024 });
  setInterval(() => destination.flush(), FLUSH_INTERVAL_MS).unref();
  // pino flushes what is pending with flushSync when the process exits, and sonic-boom's flushSync
  // retries a failed write every 100 ms, forever, unless the error is EAGAIN: with standard
  // output's reader gone (EPIPE: a pipe or socket closed, a log shipper stopped), the process never
  // exited. Writing nothing fails the same way, so it asks first whether anyone still reads.
  const flushSync = destination.flushSync.bind(destination);
  destination.flushSync = () => {
    try {
      writeSync(STDOUT, '');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return;
    }
    flushSync();
  };
  // The first start's banner goes through process.stdout, whose write fails the same way; unheard,
  // that error would end the process with 1 in the middle of its shutdown.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  return destination;
}
