import { advanceClock, showClock } from '../areas/billing/metering/test-clock.ts';
import { seedDemoHistory } from '../areas/billing/metering/usage-ledger.ts';
import { setSchedulingEnabled } from '../areas/compute/schedules/scheduling-operator.ts';
import { setProtectionByOperator } from '../areas/compute/vms/vm-protection.ts';
import { addMemberByOperator, createOrganizationByOperator } from '../areas/identity/organizations/organization-operator.ts';
import { setPlanMaxBuckets } from '../areas/storage/quotas/plan-operator.ts';
import type { Config } from '../config.ts';
import type { Actor } from '../core/principal.ts';
import { parseDuration } from '../core/test-clocks.ts';
import { withTransaction, type Pool } from '../db/pool.ts';
import type { Logger } from '../logging.ts';
import { withAdminAreas } from './admin-areas.ts';

// Each verb calls the service of the feature it changes (the same the API's handlers call); this
// file only reads the command line.

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
        const created = await createOrganizationByOperator(tx, { name, actor });
        // Invented past usage, labelled demo in its invoices: only when asked for.
        if (options['demo-history'] === true) await seedDemoHistory(tx, created.orgId, new Date());
        return { org_id: created.orgId, api_key: created.apiKey };
      });
    }
    case 'add-member': {
      const orgId = uuid(options, 'org');
      const subject = required(options, 'subject');
      const role = required(options, 'role');
      if (role !== 'owner' && role !== 'member') throw new AdminUsageError('--role must be owner or member');
      await assertOrgExists(pool, orgId);
      const issuer = typeof options.issuer === 'string' ? options.issuer.replace(/\/$/, '') : null;
      return withTransaction(pool, (tx) =>
        addMemberByOperator(tx, { orgId, subject, issuer, role, withApiKey: options['api-key'] === true, actor }),
      );
    }
    case 'set-plan': {
      const orgId = uuid(options, 'org');
      const raw = required(options, 'max-buckets');
      const override = raw === 'default' ? null : Number(raw);
      if (override !== null && (!Number.isInteger(override) || override < 0 || override > 100_000))
        throw new AdminUsageError('--max-buckets must be an integer from 0 to 100000, or default');
      await assertOrgExists(pool, orgId);
      return setPlanMaxBuckets(pool, { orgId, override, actor });
    }
    case 'scheduling': {
      const orgId = uuid(options, 'org');
      const enabled = flag(options, 'enabled');
      await assertOrgExists(pool, orgId);
      return setSchedulingEnabled(pool, { orgId, enabled, actor });
    }
    case 'set-protection': {
      const orgId = uuid(options, 'org');
      const vmId = uuid(options, 'vm');
      const isProtected = flag(options, 'protected');
      await assertOrgExists(pool, orgId);
      const vm = await withTransaction(pool, (tx) => setProtectionByOperator(tx, { orgId, vmId, protected: isProtected, actor }));
      return { org_id: orgId, vm_id: vm.id, protected: vm.protected, allowed_actions: vm.allowed_actions };
    }
    case 'clock': {
      const action = context.args?.[0];
      if (action !== 'advance' && action !== 'show') throw new AdminUsageError('clock takes advance or show');
      const orgId = uuid(options, 'org');
      await assertOrgExists(pool, orgId);
      if (action === 'show') return showClock(pool, orgId);
      // Refused unless this command, like the servers, runs with test clocks on: a moved clock
      // means nothing to a server that ignores it.
      const { config, log } = context;
      if (!config?.testClocks || !log)
        throw new AdminUsageError('test clocks are off: set TEST_CLOCKS=true (for the servers and this command)');
      const byMs = parseDuration(required(options, 'by'));
      if (byMs === undefined || byMs <= 0) throw new AdminUsageError('--by must be a duration such as 90s, 15m, 6h or 32d');
      return withAdminAreas(pool, config, log, (areas) => advanceClock(pool, areas.ports.billingRun, { orgId, byMs, actor }));
    }
    default:
      throw new AdminUsageError(`unknown verb ${JSON.stringify(verb)}\n${USAGE}`);
  }
}
