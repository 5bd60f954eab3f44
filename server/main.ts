// `npm start`: serves the API. With no configuration: http://127.0.0.1:8080, an embedded
// PostgreSQL in ./data, simulated backends. See README "Configuration".
import { bootstrapIfEmpty, keepBootstrapAddressCurrent } from './bootstrap.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './logging.ts';
import { startPlatform } from './platform.ts';
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
const platform = await startPlatform(config, log).catch((error: unknown) => {
  // A bad catalogue, a busy port, an unreachable database: one line saying what to change.
  const reason = describeStartupFailure(error, config);
  if (reason === undefined) throw error;
  console.error(`cloud-platform: ${reason}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
const baseUrl = config.publicBaseUrl ?? platform.url;
const credentials = await bootstrapIfEmpty(platform.pool, {
  dataDir: config.dataDir,
  baseUrl,
  now: new Date(),
  demoHistory: config.demoHistory,
});
if (!credentials) keepBootstrapAddressCurrent(config.dataDir, baseUrl);
if (credentials) {
  // Printed once, on the first start, for the operator to copy; never written to the log.
  process.stdout.write(
    [
      '',
      'First start: created an organization and its owner API key (read and write).',
      `  org_id:   ${credentials.org_id}`,
      `  api_key:  ${credentials.api_key}`,
      `  base_url: ${credentials.base_url}`,
      `Saved to ${config.dataDir}/bootstrap.json (mode 0600). The key is not shown again.`,
      '',
      '',
    ].join('\n'),
  );
}
log.info({ url: platform.url, data_dir: config.databaseUrl ? undefined : config.dataDir, s3_endpoint: config.rgw?.publicUrl }, 'listening');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing requests, releasing claimed work');
    platform.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
