// Two server processes on one database: what a change made through one must do to the other.
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createOrganization } from '../../server/areas/identity/organizations/organization-service.ts';
import { withTransaction } from '../../server/db/pool.ts';
import { createTestDatabase, startServerProcess } from './server.ts';

type ServerProcess = Awaited<ReturnType<typeof startServerProcess>>;

export interface SharedDatabase {
  first: ServerProcess;
  second: ServerProcess;
  /** A pool on the database itself, for what an operator would change there directly. */
  pool: pg.Pool;
  orgId: string;
  ownerKey: string;
}

/**
 * Two server processes on one new database with an organization in it, started before the
 * file's tests and stopped after them. The fields are set once `beforeAll` has run.
 */
export function twoProcessesOnOneDatabase(orgName: string): SharedDatabase {
  const shared = {} as SharedDatabase;
  beforeAll(async () => {
    const databaseUrl = await createTestDatabase({ migrated: true });
    shared.first = await startServerProcess(databaseUrl);
    shared.second = await startServerProcess(databaseUrl);
    shared.pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    const org = await withTransaction(shared.pool, (tx) => createOrganization(tx, { name: orgName, ownerSubject: `${orgName}-owner` }));
    shared.orgId = org.orgId;
    shared.ownerKey = org.apiKey;
  }, 120_000);
  afterAll(async () => {
    await shared.first?.stop();
    await shared.second?.stop();
    await shared.pool?.end();
  });
  return shared;
}

/**
 * Runs `change` while the process `pid` is stopped (SIGSTOP), resuming it after `stoppedMs`;
 * answers whether `change` was still unanswered when the process resumed (a change that must
 * wait for every process to forget what it cached).
 */
export async function answeredOnlyAfterResume(pid: number, stoppedMs: number, change: () => Promise<void>): Promise<boolean> {
  process.kill(pid, 'SIGSTOP');
  let resumed = false;
  const resume = setTimeout(() => {
    resumed = true;
    process.kill(pid, 'SIGCONT');
  }, stoppedMs);
  try {
    await change();
    return resumed;
  } finally {
    clearTimeout(resume);
    process.kill(pid, 'SIGCONT');
  }
}
