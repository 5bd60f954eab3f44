// Each kind of change is announced where it commits, once: spend budget thresholds by metering,
// invoices when the billing run finalizes them, storage warnings by the reconciler, API keys by
// their requests, and the ends of operations by the engine (failed and cancelled too). Every
// event the log shows has the payload the contract's webhooks section declares for its type.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer, type TestOrg, type TestServer } from '../../../support/server.ts';
import { activeBucket } from '../storage/support.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    METERING_INTERVAL_MS: '200',
    RECONCILE_INTERVAL_MS: '200',
    // The creation of ends-1 is retried until it fails (backoff of about a second in all), so the
    // firewall change queued behind it is still queued when cancelled, however busy the machine.
    SIM_FAULTS: 'hypervisor.createServer@ends-1=transient*100',
  });
});
afterAll(() => server?.close());

const GiB = 1024 ** 3;

/** The organizations of the tests: their logs are checked against the contract at the end. */
const orgs: TestOrg[] = [];
async function newOrg(name: string, options: { demoHistory?: boolean } = {}): Promise<TestOrg> {
  const org = await server.createOrg(name, options);
  orgs.push(org);
  return org;
}

/** The events of one type in the organization's log, oldest first. */
async function eventsOf(org: TestOrg, type: string): Promise<any[]> {
  return ((await org.call('GET', `/events?type=${type}&limit=200`)).body.items as any[]).reverse();
}

/** Every event of the organization, checked against the schema its type has in the webhooks section. */
async function expectEventsAsDeclared(org: TestOrg): Promise<void> {
  const document = JSON.parse(readFileSync(new URL('../../../../generated/openapi.json', import.meta.url), 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ ...document, $id: 'contract' });
  const schemaOf = new Map<string, string>();
  for (const [name, item] of Object.entries<any>(document.webhooks)) {
    const schema = item.post.requestBody.content['application/json'].schema.$ref as string;
    const type = document.components.schemas[schema.split('/').pop()!].properties.type;
    for (const value of type.enum ?? [type.const]) schemaOf.set(value, `contract${schema}`);
    expect(name).toBe(name.toLowerCase());
  }
  const events = (await org.call('GET', '/events?limit=200')).body.items as any[];
  expect(events.length).toBeGreaterThan(0);
  for (const event of events) {
    const validate = ajv.getSchema(schemaOf.get(event.type)!)!;
    expect(validate(event), `${event.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }
}

describe('announced where they commit', () => {
  test('spend budget thresholds: 50, 80 and 100 percent, each once', async () => {
    const org = await newOrg('Budgeted');
    expect((await org.call('PUT', '/billing', { body: { spend_budget_cents: 100 } })).status).toBe(200);
    const month = `${new Date().toISOString().slice(0, 7)}-01`;
    // vCPU hours at 0.6 cents each: 85 hours are 51 cents, 140 are 84, 170 are 102.
    const spend = (hours: number) =>
      server.pool.query(
        `INSERT INTO usage_totals (org_id, month, meter, quantity) VALUES ($1, $2, 'vcpu_hour', $3)
         ON CONFLICT (org_id, month, meter) DO UPDATE SET quantity = EXCLUDED.quantity`,
        [org.orgId, month, hours],
      );
    const reached = async (count: number) =>
      eventually(async () => {
        const events = await eventsOf(org, 'billing.budget_threshold_reached');
        return events.length >= count ? events : undefined;
      }, `${count} thresholds`);
    await spend(85);
    expect((await reached(1)).map((event) => event.data.threshold_percent)).toEqual([50]);
    await spend(140);
    await reached(2);
    await spend(170);
    const events = await reached(3);
    // A few more passes: nothing is announced twice.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await eventsOf(org, 'billing.budget_threshold_reached')).map((event) => event.data)).toEqual([
      { threshold_percent: 50, spend_budget_cents: 100, estimated_cents: 51, month: month.slice(0, 7) },
      { threshold_percent: 80, spend_budget_cents: 100, estimated_cents: 84, month: month.slice(0, 7) },
      { threshold_percent: 100, spend_budget_cents: 100, estimated_cents: 102, month: month.slice(0, 7) },
    ]);
    expect(events[0]).toMatchObject({ resource_type: 'billing', resource_id: org.orgId });
  });

  test('invoices, once the billing run finalizes them', async () => {
    const org = await newOrg('Invoiced', { demoHistory: true });
    const invoices = await eventually(async () => {
      const items = (await org.call('GET', '/invoices')).body.items as any[];
      return items.length === 3 && items.every((invoice) => invoice.status !== 'draft') ? items : undefined;
    }, 'three finalized invoices');
    const events = await eventually(async () => {
      const found = await eventsOf(org, 'invoice.finalized');
      return found.length === 3 ? found : undefined;
    });
    expect(events.map((event) => event.resource_id).sort()).toEqual(invoices.map((invoice) => invoice.id).sort());
    for (const event of events) {
      const invoice = invoices.find((candidate) => candidate.id === event.resource_id);
      const { hosted_invoice_url: _page, invoice_pdf: _pdf, ...figures } = invoice;
      expect(event.data.invoice).toMatchObject(figures);
      expect(event.data.invoice.hosted_invoice_url).toMatch(/^http/);
    }
  });

  test('storage usage reaching 90% of the ceiling, and the ceiling, each once while it lasts', async () => {
    const org = await newOrg('Filling up');
    expect((await org.call('PUT', '/s3/quota', { body: { hard_bytes: GiB } })).status).toBe(200);
    const bucket = await activeBucket(server, org, 'filling-up');
    const store = (bytes: number, key: string) =>
      server.pool.query(
        `INSERT INTO sim_objectstore_objects (bucket_id, key, version_id, delete_marker, size_bytes) VALUES ($1, $2, 'v1', false, $3)`,
        [bucket.id, key, bytes],
      );
    await store(Math.ceil(0.95 * GiB), 'most');
    const soft = await eventually(async () => {
      const found = await eventsOf(org, 'storage.quota_warning');
      return found.length === 1 ? found[0] : undefined;
    });
    expect(soft).toMatchObject({ resource_type: 's3_quota', resource_id: org.orgId });
    expect(soft.data).toEqual({
      level: 'soft_limit',
      usage_bytes: Math.ceil(0.95 * GiB),
      soft_bytes: Math.floor(0.9 * GiB),
      hard_bytes: GiB,
    });
    await store(GiB, 'too-much');
    const both = await eventually(async () => {
      const found = await eventsOf(org, 'storage.quota_warning');
      return found.length === 2 ? found : undefined;
    });
    expect(both[1].data.level).toBe('ceiling');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await eventsOf(org, 'storage.quota_warning')).toHaveLength(2);
  });

  test('API keys created and revoked; revoking a revoked key announces nothing', async () => {
    const org = await newOrg('Keys');
    const key = (await org.call('POST', '/api-tokens', { body: { name: 'short-lived' } })).body;
    await org.call('DELETE', `/api-tokens/${key.token.id}`);
    const revoked = (await org.call('DELETE', `/api-tokens/${key.token.id}`)).body;
    expect((await eventsOf(org, 'api_key.created')).map((event) => event.data.api_key)).toEqual([key.token]);
    expect((await eventsOf(org, 'api_key.revoked')).map((event) => event.data.api_key)).toEqual([revoked]);
    expect((await org.call('GET', `/events?resource_id=${key.token.id}`)).body.items.map((event: any) => event.type)).toEqual([
      'api_key.revoked',
      'api_key.created',
    ]);
  });

  test('operations that fail or are cancelled', async () => {
    const org = await newOrg('Ends');
    // A firewall change queued behind the instance's creation (retried: SIM_FAULTS above): still
    // queued when cancelled.
    const created = await org.call('POST', '/compute/vms', {
      body: {
        name: 'ends-1',
        image: 'ubuntu-24.04',
        region: 'fra1',
        vcpus: 1,
        memory_mb: 1024,
        disk_gb: 20,
        storage_pool: 'fra1-ssd',
        network_profile: 'fra1-standard',
      },
    });
    const queued = await org.call('PUT', `/compute/vms/${created.body.vm.id}/firewall`, {
      body: { inbound: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }] },
    });
    const cancelled = await org.call('POST', `/operations/${queued.body.operation.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    const events = await eventually(async () => {
      const found = await eventsOf(org, 'operation.cancelled');
      return found.length === 1 ? found : undefined;
    });
    expect(events[0].data.operation).toEqual(cancelled.body);
  });

  test('every event in the log has the payload its type declares', async () => {
    expect(orgs.length).toBeGreaterThanOrEqual(5);
    for (const org of orgs) await expectEventsAsDeclared(org);
  });
});
