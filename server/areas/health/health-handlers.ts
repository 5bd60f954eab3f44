import type { OperationHandlers } from '../../../generated/operations.ts';
import type { Config } from '../../config.ts';
import type { RequestContext } from '../../core/request-context.ts';
import { pendingMigrations } from '../../db/migrate.ts';
import type { Pool } from '../../db/pool.ts';
import { driverMigrations } from '../../drivers/selection.ts';
import type { AreaPorts } from '../area.ts';
import { notReady } from './health-errors.ts';

/** How long the readiness probe waits for the database before calling it unreachable. */
const DATABASE_CHECK_MS = 2_000;

/**
 * Liveness and readiness, for operators and load balancers (no credential). Liveness says the
 * process serves HTTP; readiness checks, each time it is asked, what serving needs.
 */
export function healthHandlers({
  pool,
  config,
  ports,
}: {
  pool: Pool;
  config: Config;
  ports: Pick<AreaPorts, 'engine'>;
}): Pick<OperationHandlers<RequestContext>, 'getHealth' | 'getReadiness'> {
  return {
    async getHealth() {
      return { status: 200, body: { status: 'ok' } };
    },

    async getReadiness() {
      const failures: string[] = [];
      const pending = await withinMs(DATABASE_CHECK_MS, pendingMigrations(pool, driverMigrations(config.drivers))).catch(() => undefined);
      if (pending === undefined) failures.push('the database does not answer');
      else if (pending.length > 0)
        failures.push(`${pending.length} migration${pending.length === 1 ? '' : 's'} not applied (${pending.join(', ')})`);
      // A process configured without background work runs no engine, and needs none.
      if (config.background && !ports.engine.running) failures.push('the operations engine is not running');
      if (failures.length > 0) throw notReady(failures);
      return { status: 200, body: { status: 'ready', checks: { database: 'ok', migrations: 'ok', engine: 'ok' } } };
    },
  };
}

function withinMs<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
