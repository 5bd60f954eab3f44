import { createHash, randomBytes } from 'node:crypto';
import type { components } from '../../../generated/openapi.ts';
import type { Clock } from '../../core/clock.ts';
import type { PoolClient } from '../../db/pool.ts';
import { consoleNotFound } from './errors.ts';

type ConsoleOut = components['schemas']['ConsoleOut'];

/** A prepared console can be collected within this long of its operation's finish. */
export const COLLECT_WINDOW_MS = 5 * 60_000;
/** A collected URL accepts its one connection within this long. */
export const URL_LIFETIME_SECONDS = 60;

const hashOf = (token: string) => createHash('sha256').update(token).digest();

interface SessionRow {
  operation_id: string;
  console_type: ConsoleOut['console_type'];
  gateway_url: string;
  prepared_at: Date;
}

/**
 * Collects a console prepared by a `vm.console` operation of this instance, once. The URL's
 * single-use token is made now and only its hash is kept: the URL exists in this response and
 * nowhere else. Any reason not to hand it out (unknown, another instance's, not prepared, already
 * collected, past the window) is the same 404.
 */
export async function collectConsole(tx: PoolClient, clock: Clock, orgId: string, vmId: string, operationId: string): Promise<ConsoleOut> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT operation_id, console_type, gateway_url, prepared_at FROM console_sessions
     WHERE operation_id = $1 AND org_id = $2 AND vm_id = $3 AND collected_at IS NULL FOR UPDATE`,
    [operationId, orgId, vmId],
  );
  const session = rows[0];
  const now = clock.now();
  if (!session || now.getTime() - session.prepared_at.getTime() > COLLECT_WINDOW_MS) throw consoleNotFound(operationId);
  const token = `cs_${randomBytes(32).toString('base64url')}`;
  await tx.query(`UPDATE console_sessions SET collected_at = $2, token_hash = $3, token_expires_at = $4 WHERE operation_id = $1`, [
    operationId,
    now,
    hashOf(token),
    new Date(now.getTime() + URL_LIFETIME_SECONDS * 1000),
  ]);
  return { console_type: session.console_type, expires_in_seconds: URL_LIFETIME_SECONDS, url: `${session.gateway_url}/${token}` };
}

/**
 * What the console gateway does when a connection arrives with a URL: the token is accepted once,
 * before it expires; then the session is the instance's console. Undefined means refused.
 */
export async function redeemConsoleToken(
  tx: PoolClient,
  clock: Clock,
  url: string,
): Promise<{ vmId: string; consoleType: ConsoleOut['console_type'] } | undefined> {
  const token = url.slice(url.lastIndexOf('/') + 1);
  const { rows } = await tx.query<{ vm_id: string; console_type: ConsoleOut['console_type'] }>(
    `UPDATE console_sessions SET redeemed_at = $2
     WHERE token_hash = $1 AND redeemed_at IS NULL AND token_expires_at > $2
     RETURNING vm_id, console_type`,
    [hashOf(token), clock.now()],
  );
  return rows[0] ? { vmId: rows[0].vm_id, consoleType: rows[0].console_type } : undefined;
}
