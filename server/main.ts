// `npm start`: serves the API. With no configuration: http://127.0.0.1:8080, an embedded
// PostgreSQL in ./data, simulated backends. See docs/operating.md, "Configuration".
import { bootstrapIfEmpty, keepBootstrapAddressCurrent } from './bootstrap.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './db/embedded.ts';
import { StartInterrupted } from './core/start-interrupted.ts';
import { createLogger } from './logging.ts';
import type { Platform } from './platform.ts';
import { assertPortsFree, lockDataDir } from './start-checks.ts';
import { describeStartupFailure } from './startup-failure.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`configuration error: ${error.message}`);
  process.exit(2);
}

const log = createLogger(config.logLevel, config.logFormat);
// A last resort, not the way errors are handled: every promise the server starts is awaited or
// caught where it can be dealt with. Should one slip through, it is logged and the server keeps
// serving, rather than Node's default of ending the process (and every request in flight).
process.on('unhandledRejection', (reason) => log.error({ err: reason }, 'unhandled promise rejection; the process keeps running'));

/** A start refused for something to change (a busy port, a DATA_DIR in use): one line, and out. */
function refuseStart(error: unknown): never {
  const reason = describeStartupFailure(error, config);
  if (reason === undefined) throw error;
  console.error(`cloud-platform: ${reason}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}

// Signals are answered from the start. One that comes while the server is still starting stops
// the start where it is: whatever was begun is undone (the embedded PostgreSQL stopped, an
// initialisation cut short removed) and nothing more is made (no organization, no key), rather
// than Node's default of ending the process at once, half-started.
const stopping = new AbortController();
/** The start, once begun (after the checks below). */
const startup: { started?: Promise<Platform> } = {};
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping.signal.aborted) return;
    log.info({ signal }, 'shutting down: finishing requests, releasing claimed work');
    stopping.abort(new StartInterrupted(signal));
    (startup.started ?? Promise.reject(new StartInterrupted(signal)))
      .then(
        (platform) => platform.close(),
        (error: unknown) => {
          if (!(error instanceof StartInterrupted)) throw error;
          log.info('stopped before it had started; nothing more was made');
        },
      )
      .then(
        () => process.exit(0),
        (error: unknown) => {
          log.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}

// Checked before anything is made: another server on this DATA_DIR (whose embedded PostgreSQL
// this one would otherwise share, and lose when that one stops), and the ports.
const dataDirLock = config.databaseUrl ? undefined : await lockDataDir(config.dataDir).catch(refuseStart);
await assertPortsFree(config).catch(refuseStart);

// The embedded PostgreSQL (initdb on a first start) runs in processes of its own: it is started
// before the rest of the server is loaded, so that loading and starting overlap.
let embedded: Promise<EmbeddedDatabase> | undefined;
/** Resolves once the embedded PostgreSQL's first process runs (or its start has ended either way). */
let launched: Promise<void> = Promise.resolve();
if (!config.databaseUrl && !stopping.signal.aborted) {
  let markLaunched = () => {};
  launched = new Promise((resolve) => (markLaunched = resolve));
  embedded = startEmbeddedDatabase(config.dataDir, (message) => log.info(message), {
    signal: stopping.signal,
    launched: markLaunched,
  });
  // Handled where startPlatform awaits it; marked here so that an early failure is not reported twice.
  embedded.then(markLaunched, markLaunched);
}
/** Starts the server: the platform, the first start's organization and key, the address written down. */
async function start(): Promise<Platform> {
  if (stopping.signal.aborted) {
    // Stopped while PostgreSQL was being launched: what that start began is undone first.
    await embedded?.catch(() => {});
    throw stopping.signal.reason;
  }
  const { startPlatform } = await import('./platform.ts');
  const platform = await startPlatform(config, log, { embedded, signal: stopping.signal }).catch((error: unknown) => {
    if (stopping.signal.aborted) throw stopping.signal.reason;
    // A bad catalogue, a busy port, an unreachable database: one line saying what to change.
    return refuseStart(error);
  });
  try {
    const baseUrl = config.publicBaseUrl ?? platform.url;
    // What S3 clients are told: the store's public S3 address (see Platform.s3PublicUrl), whichever store.
    const s3Endpoint = platform.s3PublicUrl;
    const credentials = await bootstrapIfEmpty(platform.pool, {
      dataDir: config.dataDir,
      baseUrl,
      s3Endpoint,
      now: new Date(),
      demoHistory: config.demoHistory,
      signal: stopping.signal,
    });
    if (!credentials) keepBootstrapAddressCurrent(config.dataDir, baseUrl, s3Endpoint);
    if (credentials) {
      // Printed once, on the first start, for the operator to copy; never written to the log.
      process.stdout.write(
        [
          '',
          'First start: created an organization and its owner API key (read and write).',
          `  org_id:   ${credentials.org_id}`,
          `  api_key:  ${credentials.api_key}`,
          `  base_url: ${credentials.base_url}`,
          ...(credentials.s3_endpoint
            ? [
                `  s3_endpoint: ${credentials.s3_endpoint}  (S3 API, path-style; create a bucket and an S3 access key through the API first)`,
              ]
            : []),
          `Saved to ${config.dataDir}/bootstrap.json (mode 0600). The key is not shown again.`,
          '',
          '',
        ].join('\n'),
      );
    }
    stopping.signal.throwIfAborted();
  } catch (error) {
    // Interrupted (or failed) after the platform started: it is stopped, as a failed start's parts are.
    await platform.close();
    throw error;
  }
  dataDirLock?.listening(platform.url);
  // Which Node runs it: `npm start` runs the one npm installed (package.json), not always the machine's.
  log.info(
    {
      url: platform.url,
      s3_endpoint: platform.s3PublicUrl,
      data_dir: config.databaseUrl ? undefined : config.dataDir,
      node: process.versions.node,
    },
    'listening',
  );
  return platform;
}

// Loading the rest of the server holds the event loop for about half a second, and the embedded
// start takes several turns of it (a free port, the OS user, the password file) before it runs
// initdb or PostgreSQL: the loading waits for that first process, so that the two overlap rather
// than follow each other (a first start's initdb began 0.6 s late, after the loading).
startup.started = launched.then(start);
// Waited for by the signal handler when a signal comes; otherwise a failure here is a bug, reported as such.
await startup.started.catch((error: unknown) => {
  if (!(error instanceof StartInterrupted)) throw error;
  // The signal handler exits once the start is undone.
});
