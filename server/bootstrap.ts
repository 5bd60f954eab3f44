import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { withTransaction, type Pool } from './db/pool.ts';
import { writeFileDurably } from './durable-files.ts';
import { seedDemoHistory } from './areas/billing/metering/usage-ledger.ts';
import { createOrganization, organizationExists } from './areas/identity/organizations/organization-service.ts';

const BOOTSTRAP_LOCK = 7_361_204_119;

export interface BootstrapCredentials {
  org_id: string;
  api_key: string;
  base_url: string;
  /** The S3 endpoint of the embedded object store (absent when another object store is configured). */
  s3_endpoint?: string;
}

/**
 * On the first start with an empty database: one organization with an owner API key (read and
 * write), written to DATA_DIR/bootstrap.json (mode 0600) and returned to be printed once.
 * Several processes starting together create it once.
 */
export async function bootstrapIfEmpty(
  pool: Pool,
  options: {
    dataDir: string;
    baseUrl: string;
    s3Endpoint: string | undefined;
    now: Date;
    demoHistory: boolean;
    /** Aborted (the start was interrupted): nothing is created; checked again just before the commit. */
    signal?: AbortSignal;
  },
): Promise<BootstrapCredentials | undefined> {
  const created = await withTransaction(pool, async (tx) => {
    options.signal?.throwIfAborted();
    await tx.query('SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK]);
    if (await organizationExists(tx)) return undefined;
    const organization = await createOrganization(tx, { name: 'Default organization', ownerSubject: 'owner' });
    if (options.demoHistory) await seedDemoHistory(tx, organization.orgId, options.now);
    options.signal?.throwIfAborted();
    return organization;
  });
  if (!created) return undefined;
  const credentials: BootstrapCredentials = {
    org_id: created.orgId,
    api_key: created.apiKey,
    base_url: options.baseUrl,
    ...(options.s3Endpoint ? { s3_endpoint: options.s3Endpoint } : {}),
  };
  mkdirSync(options.dataDir, { recursive: true });
  writeBootstrapFile(path.join(options.dataDir, 'bootstrap.json'), credentials);
  return credentials;
}

/**
 * Keeps `bootstrap.json` in step with where the API and the S3 endpoint now listen (another
 * PORT, S3_PORT, HOST, PUBLIC_BASE_URL or S3_PUBLIC_URL than at the first start), so that the
 * README's commands keep working. Other fields are kept as they are; nothing is written when
 * nothing changed.
 */
export function keepBootstrapAddressCurrent(dataDir: string, baseUrl: string, s3Endpoint?: string): void {
  const file = path.join(dataDir, 'bootstrap.json');
  if (!existsSync(file)) return;
  const saved = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const current: Record<string, unknown> = { ...saved, base_url: baseUrl };
  if (s3Endpoint) current.s3_endpoint = s3Endpoint;
  else delete current.s3_endpoint;
  if (JSON.stringify(current) === JSON.stringify(saved)) return;
  writeBootstrapFile(file, current);
}

/**
 * Writes the file whole or not at all (a file of its own, then renamed over it): scripts and
 * tests wait for bootstrap.json to appear and read it at once, and an in-place write let them
 * read it empty or cut short. Durable before the key in it is printed (`writeFileDurably`).
 */
function writeBootstrapFile(file: string, content: object): void {
  writeFileDurably(file, `${JSON.stringify(content, null, 2)}\n`);
}
