// Starts the S3 endpoint in a thread of its own (s3-thread-entry.ts) and keeps it running: the API's
// event loop and heap never carry an S3 body. The main thread answers the thread's bucket changes
// with the platform's own services (s3-port.ts) and writes its log lines. A thread that dies is
// started again after a pause (S3 clients retry a refused connection); the platform stopping
// stops it after the requests in flight.
import { MessageChannel, Worker } from 'node:worker_threads';
import type { Config } from '../../config.ts';
import { answerCalls } from '../../core/thread-calls.ts';
import type { S3Platform } from '../../drivers/embedded/s3/platform-port.ts';
import type { S3Endpoint } from '../../drivers/embedded/s3/server.ts';
import type { Logger } from '../../logging.ts';
import { S3_PLATFORM_CHANGES } from './s3-port.ts';
import type { S3ThreadData, S3ThreadMessage } from './s3-thread-entry.ts';

const ENTRY = new URL('./s3-thread-entry.ts', import.meta.url);
/** The pause before a thread that died is started again. */
const RESTART_PAUSE_MS = 1_000;
/** The longest a stop waits for the requests in flight before the thread is ended. */
const STOP_WAIT_MS = 10_000;

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
const LEVELS: Record<number, Level> = { 60: 'fatal', 50: 'error', 40: 'warn', 30: 'info', 20: 'debug', 10: 'trace' };

/** Writes a log line of the thread (pino's JSON) with the main thread's logger. */
function relay(log: Logger, line: string): void {
  try {
    const { level, msg, ...fields } = JSON.parse(line) as { level: number; msg?: string } & Record<string, unknown>;
    log[LEVELS[level] ?? 'info'](fields, msg);
  } catch {
    log.warn({ line }, 'the S3 thread wrote a line that is not JSON');
  }
}

interface Running {
  worker: Worker;
  stopping: boolean;
}

/** The thread's connections: the store's queries of concurrent S3 requests. */
const S3_THREAD_CONNECTIONS = 12;

export async function startS3Thread(options: {
  config: Config;
  connectionString: string;
  /** The storage area's port: the thread's bucket changes are answered with it. */
  platform: S3Platform;
  /** The API's requests in flight (core/api-activity.ts): the endpoint yields to a busy API. */
  apiActivity: SharedArrayBuffer | undefined;
  log: Logger;
}): Promise<S3Endpoint> {
  const { log } = options;
  let current: Running | undefined;
  let stopped = false;

  /** Starts a thread; resolves with its URL once it listens, rejects when it fails to start. */
  const launch = (): Promise<string> => {
    const changes = new MessageChannel();
    const logs = new MessageChannel();
    answerCalls(changes.port1, options.platform, S3_PLATFORM_CHANGES);
    logs.port1.on('message', (line: string) => relay(log, line));
    const data: S3ThreadData = {
      config: options.config,
      connectionString: options.connectionString,
      poolSize: S3_THREAD_CONNECTIONS,
      apiActivity: options.apiActivity,
      changes: changes.port2,
      logs: logs.port2,
    };
    const worker = new Worker(ENTRY, { workerData: data, transferList: [changes.port2, logs.port2] });
    const running: Running = { worker, stopping: false };
    current = running;
    return new Promise((resolve, reject) => {
      let started = false;
      worker.on('message', (message: S3ThreadMessage) => {
        if ('listening' in message) {
          started = true;
          resolve(message.listening);
        } else if ('failed' in message) {
          reject(new Error(`the S3 endpoint did not start: ${message.failed}`));
          void worker.terminate();
        }
      });
      worker.on('error', (error) => {
        if (!started) reject(error);
        else log.error({ err: error }, 'the S3 thread failed');
      });
      worker.on('exit', (code) => {
        changes.port1.close();
        logs.port1.close();
        if (!started) return reject(new Error(`the S3 endpoint's thread ended (${code}) before it listened`));
        if (running.stopping || stopped) return;
        log.error({ code }, `the S3 thread ended; starting it again in ${RESTART_PAUSE_MS} ms`);
        setTimeout(() => void relaunch(), RESTART_PAUSE_MS).unref();
      });
    });
  };

  const relaunch = async (): Promise<void> => {
    if (stopped) return;
    try {
      await launch();
      log.info('the S3 thread is serving again');
    } catch (error) {
      log.error({ err: error }, `the S3 thread did not start again; trying again in ${RESTART_PAUSE_MS} ms`);
      setTimeout(() => void relaunch(), RESTART_PAUSE_MS).unref();
    }
  };

  const url = await launch();
  return {
    url,
    async close() {
      stopped = true;
      const running = current;
      if (!running) return;
      running.stopping = true;
      const { worker } = running;
      const closed = new Promise<void>((resolve) => {
        worker.on('message', (message: S3ThreadMessage) => 'closed' in message && resolve());
        worker.once('exit', () => resolve());
      });
      worker.postMessage('stop');
      const timer = setTimeout(() => void worker.terminate(), STOP_WAIT_MS);
      await closed;
      clearTimeout(timer);
      await worker.terminate();
    },
  };
}
