import type { Config } from '../config.ts';
import { recordAudit } from '../core/audit.ts';
import { parseDuration } from '../core/test-clocks.ts';
import type { Logger } from '../logging.ts';
import type { Actor } from '../core/principal.ts';
import { withTransaction, type Pool } from '../db/pool.ts';
import { seedDemoHistory } from '../areas/billing/usage.ts';
import { addMember, createApiKeyRow, createOrganization } from '../auth/organizations.ts';

export const USAGE = `usage: npm run admin -- <verb> [options] [--json]

verbs:
  create-org --name NAME [--demo-history]         a new organization and its owner's API key
                                                 (--demo-history: three invented past months, invoices labelled demo)
  add-member --org ORG --subject SUB --role owner|member [--issuer URL] [--api-key]
                                                  a member (OIDC subject of the issuer); --api-key
                                                  also creates a read+write API key for them
  set-plan --org ORG --max-buckets N|default      the live override of the plan's bucket limit
  scheduling --org ORG --enabled true|false       whether new scheduled restarts are accepted
  set-protection --org ORG --vm VM --protected true|false
                                                  the operator's protection override, also where
                                                  the customer may not switch protection
  clock advance --org ORG --by DURATION           moves the organization's test clock forward
                                                  (90s, 15m, 6h, 32d): meters the stretch, closes
                                                  finished months into invoices; due restarts run
                                                  and console URLs expire by it (needs TEST_CLOCKS=true)
  clock show --org ORG                            the organization's test clock

options:
  --operator NAME   who acts (audit actor_sub); defaults to $USER
  --json            machine-readable output`;

export class AdminUsageError extends Error {}

type Options = Record<string, string | boolean | undefined>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value === '') throw new AdminUsageError(`--${name} is required`);
  return value;
}

function uuid(options: Options, name: string): string {
  const value = required(options, name);
  if (!UUID.test(value)) throw new AdminUsageError(`--${name} must be a uuid`);
  return value.toLowerCase();
}

function flag(options: Options, name: string): boolean {
  const value = required(options, name);
  if (value !== 'true' && value !== 'false') throw new AdminUsageError(`--${name} must be true or false`);
  return value === 'true';
}

async function assertOrgExists(pool: Pool, orgId: string): Promise<void> {
  const { rowCount } = await pool.query('SELECT 1 FROM orgs WHERE id = $1', [orgId]);
  if (rowCount === 0) throw new AdminUsageError(`no organization ${orgId}`);
}

/**
 * Sets one column of the organization, with its audit event (before and after), in one
 * transaction. Returns the value before and the plan figure the output shows.
 */
async function updateOrgSetting<Column extends 'max_buckets_override' | 'scheduling_enabled'>(
  pool: Pool,
  actor: Actor,
  orgId: string,
  action: string,
  column: Column,
  value: unknown,
): Promise<{ before: unknown; row: { plan_max_buckets: number } }> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ value: unknown }>(`SELECT ${column} AS value FROM orgs WHERE id = $1 FOR UPDATE`, [orgId]);
    const updated = await tx.query<{ plan_max_buckets: number }>(
      `UPDATE orgs SET ${column} = $2, updated_at = now() WHERE id = $1 RETURNING plan_max_buckets`,
      [orgId, value],
    );
    const before = rows[0]!.value;
    await recordAudit(tx, {
      orgId,
      action,
      resourceType: 'organization',
      resourceId: orgId,
      before: { [column]: before },
      after: { [column]: value },
      actor,
      result: 'succeeded',
    });
    return { before, row: updated.rows[0]! };
  });
}

/** Runs one admin verb and returns what it prints. */
export async function runAdminCommand(
  pool: Pool,
  verb: string,
  options: Options,
  user: string | undefined,
  context: { config?: Config; log?: Logger; args?: string[] } = {},
): Promise<Record<string, unknown>> {
  const actor: Actor = {
    subject: typeof options.operator === 'string' ? options.operator : (user ?? 'operator'),
    realm: 'operator',
    tokenId: null,
  };
  switch (verb) {
    case 'create-org': {
      const name = required(options, 'name');
      if (name.length > 100) throw new AdminUsageError('--name must be at most 100 characters');
      return withTransaction(pool, async (tx) => {
        const created = await createOrganization(tx, { name, ownerSubject: 'owner' });
        // Invented past usage, labelled demo in its invoices: only when asked for.
        if (options['demo-history'] === true) await seedDemoHistory(tx, created.orgId, new Date());
        await recordAudit(tx, {
          orgId: created.orgId,
          action: 'org.create',
          resourceType: 'organization',
          resourceId: created.orgId,
          after: { name },
          actor,
          result: 'succeeded',
        });
        return { org_id: created.orgId, api_key: created.apiKey };
      });
    }
    case 'add-member': {
      const orgId = uuid(options, 'org');
      const subject = required(options, 'subject');
      const role = required(options, 'role');
      if (role !== 'owner' && role !== 'member') throw new AdminUsageError('--role must be owner or member');
      await assertOrgExists(pool, orgId);
      return withTransaction(pool, async (tx) => {
        const issuer = typeof options.issuer === 'string' ? options.issuer.replace(/\/$/, '') : null;
        const memberId = await addMember(tx, { orgId, subject, issuer, role: role });
        await recordAudit(tx, {
          orgId,
          action: 'org.add_member',
          resourceType: 'membership',
          resourceId: memberId,
          after: { subject, issuer, role },
          actor,
          result: 'succeeded',
        });
        const result: Record<string, unknown> = { member_id: memberId, org_id: orgId, subject, role };
        if (options['api-key'] === true) {
          const key = await createApiKeyRow(tx, { orgId, memberId, name: `${subject} key`, scopes: ['read', 'write'], expiresAt: null });
          result.api_key = key.secret;
        }
        return result;
      });
    }
    case 'set-plan': {
      const orgId = uuid(options, 'org');
      const raw = required(options, 'max-buckets');
      const override = raw === 'default' ? null : Number(raw);
      if (override !== null && (!Number.isInteger(override) || override < 0 || override > 100_000))
        throw new AdminUsageError('--max-buckets must be an integer from 0 to 100000, or default');
      await assertOrgExists(pool, orgId);
      const { row } = await updateOrgSetting(pool, actor, orgId, 'org.set_plan', 'max_buckets_override', override);
      return {
        org_id: orgId,
        plan_max_buckets: row.plan_max_buckets,
        max_buckets_override: override,
        max_buckets: override ?? row.plan_max_buckets,
      };
    }
    case 'scheduling': {
      const orgId = uuid(options, 'org');
      const enabled = flag(options, 'enabled');
      await assertOrgExists(pool, orgId);
      await updateOrgSetting(pool, actor, orgId, 'org.set_scheduling', 'scheduling_enabled', enabled);
      return { org_id: orgId, scheduling_enabled: enabled };
    }
    case 'set-protection': {
      const orgId = uuid(options, 'org');
      const vmId = uuid(options, 'vm');
      const isProtected = flag(options, 'protected');
      await assertOrgExists(pool, orgId);
      // Loaded here: only this verb needs the compute area.
      const { setProtectionByOperator } = await import('../areas/compute/operator.ts');
      const vm = await withTransaction(pool, (tx) => setProtectionByOperator(tx, { orgId, vmId, protected: isProtected, actor }));
      return { org_id: orgId, vm_id: vm.id, protected: vm.protected, allowed_actions: vm.allowed_actions };
    }
    case 'clock': {
      const action = context.args?.[0];
      if (action !== 'advance' && action !== 'show') throw new AdminUsageError('clock takes advance or show');
      const orgId = uuid(options, 'org');
      await assertOrgExists(pool, orgId);
      const { advanceClock, showClock } = await import('./clock.ts');
      if (action === 'show') return showClock(pool, orgId);
      // Refused unless this command, like the servers, runs with test clocks on: a moved clock
      // means nothing to a server that ignores it.
      if (!context.config?.testClocks || !context.log)
        throw new AdminUsageError('test clocks are off: set TEST_CLOCKS=true (for the servers and this command)');
      const byMs = parseDuration(required(options, 'by'));
      if (byMs === undefined || byMs <= 0) throw new AdminUsageError('--by must be a duration such as 90s, 15m, 6h or 32d');
      return advanceClock(pool, context.config, context.log, { orgId, byMs, actor });
    }
    default:
      throw new AdminUsageError(`unknown verb ${JSON.stringify(verb)}\n${USAGE}`);
  }
}
