// `npm run admin -- <verb> [options] [--json]`: operator commands on the same database as the
// server, whether or not a server is running (with the embedded database it uses the PostgreSQL
// the server started, or starts it itself for the command). Every change leaves an audit event
// with actor_realm `operator`.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger } from '../logging.ts';
import { openDatabase } from '../platform.ts';
import { runAdminCommand, AdminUsageError, USAGE } from './commands.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: 'boolean', default: false },
    name: { type: 'string' },
    org: { type: 'string' },
    subject: { type: 'string' },
    issuer: { type: 'string' },
    role: { type: 'string' },
    'api-key': { type: 'boolean', default: false },
    'demo-history': { type: 'boolean', default: false },
    'max-buckets': { type: 'string' },
    enabled: { type: 'string' },
    vm: { type: 'string' },
    protected: { type: 'string' },
    operator: { type: 'string' },
    by: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

const print = (result: Record<string, unknown>) => {
  if (values.json) console.log(JSON.stringify(result));
  else
    for (const [key, value] of Object.entries(result)) console.log(`${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
};

if (values.help || positionals.length === 0) {
  console.log(USAGE);
  process.exit(positionals.length === 0 && !values.help ? 2 : 0);
}

let exitCode = 0;
try {
  const config = loadConfig();
  const log = createLogger('warn');
  const database = await openDatabase(config, log);
  try {
    print(await runAdminCommand(database.pool, positionals[0]!, values, process.env.USER, { config, log, args: positionals.slice(1) }));
  } finally {
    await database.stop();
  }
} catch (error) {
  if (error instanceof AdminUsageError || error instanceof ConfigError) {
    console.error(values.json ? JSON.stringify({ error: error.message }) : `admin: ${error.message}`);
    exitCode = 2;
  } else {
    console.error(values.json ? JSON.stringify({ error: (error as Error).message }) : `admin: ${(error as Error).message}`);
    exitCode = 1;
  }
}
process.exit(exitCode);
