// Memory after a burst: once the server is quiet, what the burst made it grow is given back
// (server/idle-collection.ts). Without that, Node kept it for as long as no new work came.
import { readFileSync } from 'node:fs';
import { afterAll, expect, test } from 'vitest';
import { IDLE_COLLECTION_DEFAULTS } from '../../server/idle-collection.ts';
import { eventually } from '../support/eventually.ts';
import type { Started } from '../support/processes.ts';
import { createTestDatabase, readBootstrap, startServerProcess } from '../support/server.ts';

const MiB = 1024 * 1024;
let server: (Started & { url: string; dataDir: string }) | undefined;
afterAll(async () => server?.stop());

/** Resident memory of the server process (Linux). */
const residentBytes = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long the server must have been quiet before it collects (5 s). */
const { quietForMs } = IDLE_COLLECTION_DEFAULTS;

test.runIf(process.platform === 'linux')(
  'memory a burst of requests made the server grow is given back once it is quiet',
  async () => {
    server = await startServerProcess(await createTestDatabase(), { LOG_LEVEL: 'debug', GC_WHEN_IDLE: 'true' });
    const { org_id: org, api_key: key } = await readBootstrap(server.dataDir);
    const pid = server.child.pid!;
    const collections = () =>
      server!
        .output()
        .split('\n')
        .filter((line) => line.includes('quiet: collected'));
    const read = async () => {
      const response = await fetch(`${server!.url}/v1/orgs/${org}/billing`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    };
    // The figure to come back to: once start-up's own garbage is gone (the server's first quiet
    // collection, which comes later on a busy machine) and the route has been read once, so that
    // what is built on first use (its validators, its optimized code) is not counted as growth.
    await eventually(() => (collections().length > 0 ? true : undefined), "the collection of start-up's garbage", 60_000);
    for (let warmUp = 0; warmUp < 20; warmUp++) await read();
    await pause(1_000);
    const quiet = residentBytes(pid);

    // Bursts of reads (32 at a time) until the process has grown by 40 MiB (one or two here; more
    // on a busy machine). How much V8 lets the heap grow before it collects by itself varies from
    // run to run: 32 MiB is enough to tell, and is what makes the server collect once quiet.
    let grown = 0;
    for (let burst = 0; burst < 10 && grown < 40 * MiB; burst++) {
      const until = Date.now() + 1_500;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (Date.now() < until) await read();
        }),
      );
      grown = residentBytes(pid) - quiet;
    }
    expect(grown, 'the bursts did not make the server grow enough to tell').toBeGreaterThanOrEqual(32 * MiB);

    // A pause of two seconds (well under quietForMs) is not yet quiet enough: collecting then would
    // throw away the code V8 optimized for the requests, which the next burst would pay for.
    const collectedDuringBursts = collections().length;
    await pause(2_000);
    expect(collections().length, 'a collection after a pause of two seconds').toBe(collectedDuringBursts);

    // Quiet again, the server collects: how soon depends on how busy the machine is (its own
    // background work must stay under a tenth of the time for quietForMs); once it has, at least
    // half the growth is given back within seconds (what stays is a few MiB the allocator keeps).
    await eventually(
      () => (collections().length > collectedDuringBursts ? true : undefined),
      'the collection once the server is quiet',
      quietForMs + 60_000,
    );
    const back = () => residentBytes(pid) - quiet <= grown / 2;
    await eventually(() => (back() ? true : undefined), 'the memory to come back', 5_000).catch((error: unknown) => {
      throw new Error(
        `resident ${Math.round(residentBytes(pid) / MiB)} MiB, ${Math.round(quiet / MiB)} before a burst that grew it by ` +
          `${Math.round(grown / MiB)}; the server's collections: ${collections().join(' ')}`,
        { cause: error },
      );
    });
  },
  180_000,
);
