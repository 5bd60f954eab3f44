import { createHash, randomBytes } from 'node:crypto';
import type { components } from '../../../../generated/openapi.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import type { PoolClient } from '../../../db/pool.ts';
import { consoleNotFound } from './console-errors.ts';

type ConsoleOut = components['schemas']['ConsoleOut'];

/** A prepared console can be collected within this long of its operation's finish. */
export const COLLECT_WINDOW_MS = 5 * 60_000;
/** A collected URL accepts its one connection within this long. */
export const URL_LIFETIME_SECONDS = 60;
/** Where the platform's console gateway takes connections: `<ws base>/console/sessions/<token>`. */
export const CONSOLE_SESSIONS_PATH = '/console/sessions/';

const hashOf = (token: string) => createHash('sha256').update(token).digest();

/** The WebSocket address of the platform at `baseUrl`: `ws://` for http, `wss://` for https. */
export function webSocketBase(baseUrl: string): string {
  return baseUrl.replace(/^http(s?):\/\//, (_match, secure: string) => `ws${secure}://`).replace(/\/$/, '');
}

interface SessionRow {
  operation_id: string;
  console_type: ConsoleOut['console_type'];
  prepared_at: Date;
}

/**
 * Collects a console prepared by a `vm.console` operation of this instance, once. The URL's
 * single-use token is made now and only its hash is kept: the URL exists in this response and
 * nowhere else. Any reason not to hand it out (unknown, another instance's, not prepared, already
 * collected, past the window) is the same 404. The token expires by the organization's clock (a
 * test clock moved forward expires it); the API key that collected it is remembered, so that
 * revoking the key ends the session.
 */
export async function collectConsole(
  tx: PoolClient,
  clocks: { orgClock: OrganizationClock },
  request: { orgId: string; vmId: string; operationId: string; tokenId: string | null; gatewayBase: string },
): Promise<ConsoleOut> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT operation_id, console_type, prepared_at FROM console_sessions
     WHERE operation_id = $1 AND org_id = $2 AND vm_id = $3 AND collected_at IS NULL FOR UPDATE`,
    [request.operationId, request.orgId, request.vmId],
  );
  const session = rows[0];
  // The window runs from when the console was prepared, by the organization's clock.
  const now = await clocks.orgClock.now(tx, request.orgId);
  if (!session || now.getTime() - session.prepared_at.getTime() > COLLECT_WINDOW_MS) throw consoleNotFound(request.operationId);
  const token = `cs_${randomBytes(32).toString('base64url')}`;
  await tx.query(
    `UPDATE console_sessions SET collected_at = $2, token_hash = $3, token_expires_at = $4, collected_by_token_id = $5
     WHERE operation_id = $1`,
    [request.operationId, now, hashOf(token), new Date(now.getTime() + URL_LIFETIME_SECONDS * 1000), request.tokenId],
  );
  return {
    console_type: session.console_type,
    expires_in_seconds: URL_LIFETIME_SECONDS,
    url: `${request.gatewayBase}${CONSOLE_SESSIONS_PATH}${token}`,
  };
}

/** A console session the gateway accepted. */
export interface RedeemedConsole {
  operationId: string;
  orgId: string;
  vmId: string;
  vmName: string;
  consoleType: ConsoleOut['console_type'];
}

/**
 * What the console gateway does when a connection arrives with a token: accepted once, before it
 * expires (by the organization's clock), while the instance exists and the API key that collected
 * it is still valid; then the session is the instance's console. Undefined means refused, for
 * whichever reason (the gateway does not say which).
 */
export async function redeemConsoleToken(tx: PoolClient, orgClock: OrganizationClock, token: string): Promise<RedeemedConsole | undefined> {
  const { rows } = await tx.query<{
    operation_id: string;
    org_id: string;
    vm_id: string;
    vm_name: string;
    console_type: ConsoleOut['console_type'];
    token_expires_at: Date;
  }>(
    `SELECT cs.operation_id, cs.org_id, cs.vm_id, v.name AS vm_name, cs.console_type, cs.token_expires_at
     FROM console_sessions cs JOIN vms v ON v.id = cs.vm_id
     LEFT JOIN api_tokens t ON t.id = cs.collected_by_token_id
     WHERE cs.token_hash = $1 AND cs.redeemed_at IS NULL AND v.deleted_at IS NULL AND v.state <> 'deleting'
       AND (cs.collected_by_token_id IS NULL OR (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())))
     FOR UPDATE OF cs`,
    [hashOf(token)],
  );
  const session = rows[0];
  if (!session) return undefined;
  const now = await orgClock.now(tx, session.org_id);
  if (session.token_expires_at.getTime() <= now.getTime()) return undefined;
  await tx.query('UPDATE console_sessions SET redeemed_at = $2 WHERE operation_id = $1', [session.operation_id, now]);
  return {
    operationId: session.operation_id,
    orgId: session.org_id,
    vmId: session.vm_id,
    vmName: session.vm_name,
    consoleType: session.console_type,
  };
}

/** Why an open session must end now, if it must: its instance is being deleted, or its API key was revoked or expired. */
export async function sessionsToEnd(
  tx: PoolClient | { query: PoolClient['query'] },
  operationIds: string[],
): Promise<Map<string, 'instance_deleted' | 'credential_revoked'>> {
  if (operationIds.length === 0) return new Map();
  const { rows } = await tx.query<{ operation_id: string; vm_gone: boolean; key_gone: boolean }>(
    `SELECT cs.operation_id, (v.id IS NULL OR v.deleted_at IS NOT NULL OR v.state = 'deleting') AS vm_gone,
       (cs.collected_by_token_id IS NOT NULL AND (t.id IS NULL OR t.revoked_at IS NOT NULL OR (t.expires_at IS NOT NULL AND t.expires_at <= now()))) AS key_gone
     FROM console_sessions cs LEFT JOIN vms v ON v.id = cs.vm_id LEFT JOIN api_tokens t ON t.id = cs.collected_by_token_id
     WHERE cs.operation_id = ANY($1::uuid[])`,
    [operationIds],
  );
  const ending = new Map<string, 'instance_deleted' | 'credential_revoked'>();
  for (const row of rows) {
    if (row.vm_gone) ending.set(row.operation_id, 'instance_deleted');
    else if (row.key_gone) ending.set(row.operation_id, 'credential_revoked');
  }
  return ending;
}

/** Records how a session ended (for operators; the URL and token are long gone). */
export async function recordSessionEnd(db: { query: PoolClient['query'] }, operationId: string, reason: string): Promise<void> {
  await db.query('UPDATE console_sessions SET ended_at = now(), end_reason = $2 WHERE operation_id = $1 AND ended_at IS NULL', [
    operationId,
    reason,
  ]);
}
