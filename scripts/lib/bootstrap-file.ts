// DATA_DIR/bootstrap.json, which a server writes on its first start just after it starts
// listening: what the tools and the tests read to reach that server's first organization.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { BootstrapCredentials } from '../../server/bootstrap.ts';
import type { Started } from './processes.ts';

/** Waits (10 s at most) for the server of `dataDir` to write bootstrap.json, and reads it. */
export async function readBootstrap(dataDir: string, server?: Started): Promise<BootstrapCredentials> {
  const file = path.join(dataDir, 'bootstrap.json');
  for (let waited = 0; !existsSync(file); waited += 20) {
    if (waited > 10_000) throw new Error(`no bootstrap.json in ${dataDir}${server ? `:\n${server.output()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return JSON.parse(readFileSync(file, 'utf8')) as BootstrapCredentials;
}
