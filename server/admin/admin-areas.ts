import { CredentialCache } from '../areas/identity/credentials/credential-cache.ts';
import { composeAreas, type ComposedAreas } from '../compose-areas.ts';
import type { Config } from '../config.ts';
import { systemClock } from '../core/clock.ts';
import { createOrganizationClock } from '../core/test-clocks.ts';
import { DatabaseListener } from '../db/listener.ts';
import type { Pool } from '../db/pool.ts';
import { createDrivers, embeddedStoreSettingsOf } from '../drivers/selection.ts';
import type { Logger } from '../logging.ts';
import { Metrics } from '../metrics.ts';

/**
 * The platform's areas, built as the server builds them, for an operator's command that needs
 * more than one area's services (the test clock meters every area's usage). Nothing listens and
 * nothing runs in the background; the drivers are closed when `use` is done.
 */
export async function withAdminAreas<T>(pool: Pool, config: Config, log: Logger, use: (areas: ComposedAreas) => Promise<T>): Promise<T> {
  const drivers = await createDrivers(config.drivers, pool, {
    ...embeddedStoreSettingsOf(config),
    rgw: config.rgw,
    qemu: config.qemu,
    log,
  });
  try {
    // Never started: the caches it would feed stay empty, and every read asks the database.
    const listener = new DatabaseListener(pool.options, log);
    const composed = composeAreas({
      pool,
      config,
      clock: systemClock,
      orgClock: createOrganizationClock(systemClock, config.testClocks),
      publicBaseUrl: () => config.publicBaseUrl ?? `http://${config.host}:${config.port}`,
      log,
      metrics: new Metrics(),
      drivers,
      embeddedStore: drivers.embeddedStore,
      listener,
      credentials: new CredentialCache(listener),
    });
    composed.bindEngine({ cancelQueued: () => Promise.reject(new Error('no engine runs in an admin command')), running: false });
    return await use(composed);
  } finally {
    await drivers.embeddedStore?.close();
  }
}
