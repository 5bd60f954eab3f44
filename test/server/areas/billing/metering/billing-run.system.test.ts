// Billing from metering, as a customer and an operator see it: instances, a public IP, stored
// bytes and egress are used; the organization's test clock is moved past the month's end by the
// operator's command; the platform's billing run issues the month's invoice, whose lines match the
// usage made, priced by the price list; its page and PDF open from the links in the API's answer.
// The operator's command and several server processes are processes of their own: the system
// tier. The invoice links' signatures: billing-run.test.ts.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { repoRoot } from '../../../../../scripts/lib/run.ts';
import { eventually } from '../../../../support/eventually.ts';
import { pdfText } from '../../../../support/pdf-text.ts';
import {
  call,
  createTestDatabase,
  readBootstrap,
  startServerProcess,
  startTestServer,
  TEST_ENV,
  type TestServer,
} from '../../../../support/server.ts';
import type { Started } from '../../../../support/processes.ts';
import { act, runningVm } from '../../compute/fixtures.ts';
import { activeBucket, objectStoreOf } from '../../storage/support.ts';

const GiB = 1024 ** 3;
const HOUR = 3_600_000;
const PRICES = { vcpu_hour: 6000, memory_gb_hour: 3000, disk_gb_hour: 60, public_ip_hour: 1000, storage_gb_month: 20000, egress_gb: 10000 };

/** `npm run admin -- …` as an operator runs it, on this database. */
async function admin(databaseUrl: string, args: string[]): Promise<Record<string, any>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [path.join(repoRoot, 'scripts', 'start.mjs'), path.join(repoRoot, 'server', 'admin', 'main.ts'), ...args, '--json'],
    { env: { ...process.env, ...TEST_ENV, DATABASE_URL: databaseUrl, TEST_CLOCKS: 'true', LOG_LEVEL: 'silent' } },
  );
  return JSON.parse(stdout);
}

/** What the metering passes' rounding (each adds quantities to a millionth) may leave off an exact figure. */
const ROUNDING = 1e-4;

/** Waits until a metering pass has seen each of `resources` ([type, id]) of the organization: it meters each from then on. */
async function meteringHasSeen(db: pg.Pool, orgId: string, resources: Array<[string, string]>): Promise<void> {
  await eventually(
    async () => {
      const { rows } = await db.query<{ resource_type: string; resource_id: string }>(
        'SELECT resource_type, resource_id FROM metering_cursors WHERE org_id = $1',
        [orgId],
      );
      // An instance is metered per powered run: its cursor is named `<id>:<powered since>`.
      const sees = ([type, id]: [string, string]) =>
        rows.some((row) => row.resource_type === type && (row.resource_id === id || row.resource_id.startsWith(`${id}:`)));
      return resources.every(sees) ? true : undefined;
    },
    `the metering pass to see ${resources.map(([type]) => type).join(', ')}`,
  );
}

/** Milliseconds from `at` to one day past the start of the next month (UTC). */
const pastMonthEnd = (at: Date) => Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 2) - at.getTime();

let server: TestServer;
const processes: Started[] = [];
beforeAll(async () => {
  server = await startTestServer({ TEST_CLOCKS: 'true', METERING_INTERVAL_MS: '200' });
});
afterAll(async () => {
  await Promise.all(processes.map((started) => started.stop()));
  await server?.close();
});

describe('a month of metered use, closed into an invoice', () => {
  test('the invoice bills the instance hours, address hours, stored bytes and egress that were used', async () => {
    const org = await server.createOrg('Metered Month');
    const store = objectStoreOf(server);
    const startedAt = Date.now();
    const [small, large] = await Promise.all([
      runningVm(server, org, { vcpus: 1, memory_mb: 1024, disk_gb: 20 }),
      runningVm(server, org, { vcpus: 4, memory_mb: 8192, disk_gb: 80 }),
    ]);
    const allocated = await org.call('POST', '/compute/public-ips', { body: { region: 'fra1' } });
    expect(allocated.status, allocated.text).toBe(202);
    await server.waitForOperation(org, allocated.body.operation.id);
    const bucket = await activeBucket(server, org, 'ledger');
    const objectBytes = 3 * GiB;
    await store.putObject({ orgId: org.orgId, bucket: bucket.name, key: 'dump.tar', sizeBytes: objectBytes });
    // Downloaded twice: 6 GiB of egress.
    await store.getObject({ orgId: org.orgId, bucket: bucket.name, key: 'dump.tar' });
    await store.getObject({ orgId: org.orgId, bucket: bucket.name, key: 'dump.tar' });
    await eventually(
      async () => ((await org.call('GET', '/s3/quota')).body.usage_bytes === objectBytes ? true : undefined),
      'the stored bytes to be measured',
    );
    // Everything is running and metered from now on: the metering pass has seen each resource
    // (it keeps a cursor for each, and meters it from there).
    await meteringHasSeen(server.pool, org.orgId, [
      ['vm', small.id],
      ['vm', large.id],
      ['public_ip', allocated.body.public_ip.id],
      ['bucket', bucket.id],
    ]);
    const readyAt = Date.now();

    // Nothing invoiced yet: the month is not over.
    expect((await org.call('GET', '/invoices')).body.items).toEqual([]);
    // Egress is a counter the metering pass reads: month-to-date has it from the pass after the
    // downloads, which on a busy machine may come after the pass that first saw the bucket.
    await eventually(async () => {
      const before = (await org.call('GET', '/billing')).body;
      return Math.abs(Number(before.month_to_date.egress_gb) - (2 * objectBytes) / GiB) < 5e-7 ? true : undefined;
    }, 'the month-to-date egress to be metered');

    const by = pastMonthEnd(new Date());
    const moved = await admin(server.databaseUrl, ['clock', 'advance', '--org', org.orgId, '--by', `${Math.ceil(by / 1000)}s`]);
    const monthStart = new Date(Date.UTC(new Date(startedAt).getUTCFullYear(), new Date(startedAt).getUTCMonth(), 1));
    const monthEnd = new Date(Date.UTC(monthStart.getUTCFullYear(), monthStart.getUTCMonth() + 1, 1));
    expect(moved.invoices).toHaveLength(1);

    const invoices = await eventually(async () => {
      const { items } = (await org.call('GET', '/invoices')).body;
      return items.length === 1 && items[0].status === 'paid' ? items : undefined;
    }, 'the invoice to be issued and collected');
    const [invoice] = invoices;
    expect(invoice).toMatchObject({
      currency: 'eur',
      status: 'paid',
      amount_due_cents: 0,
      period_start: monthStart.toISOString(),
      period_end: monthEnd.toISOString(),
    });
    expect(invoice.id).toMatch(/^in_\d{4}_\d{2}_[0-9a-f]{8}$/);

    // The lines, against the usage made: each resource ran from (about) its start to the month's end.
    const { rows: lines } = await server.pool.query<{
      meter: string;
      quantity: string;
      amount_cents: string;
      unit_amount_micro_eur: string;
    }>(
      'SELECT meter, quantity::text, amount_cents::text, unit_amount_micro_eur::text FROM invoice_lines WHERE invoice_id = $1 ORDER BY position',
      [invoice.id],
    );
    const quantity = (meter: string) => Number(lines.find((line) => line.meter === meter)?.quantity);
    const hoursFrom = (at: number) => (monthEnd.getTime() - at) / HOUR;
    // Between "metered from the moment it ran" and "from when the test saw the metering pass had
    // seen it": a resource is metered from its first sighting by a metering pass, and the test
    // waited for that sighting, however late it came on a busy machine. Each pass rounds what it
    // adds to a millionth, hence the tolerance.
    const within = (value: number, perHour: number) => {
      expect(value).toBeGreaterThanOrEqual(perHour * hoursFrom(readyAt) - ROUNDING);
      expect(value).toBeLessThanOrEqual(perHour * hoursFrom(startedAt) + ROUNDING);
    };
    expect(lines.map((line) => line.meter)).toEqual([
      'vcpu_hour',
      'memory_gb_hour',
      'disk_gb_hour',
      'public_ip_hour',
      'storage_gb_month',
      'egress_gb',
    ]);
    within(quantity('vcpu_hour'), 1 + 4);
    within(quantity('memory_gb_hour'), 1 + 8);
    within(quantity('disk_gb_hour'), 20 + 80);
    within(quantity('public_ip_hour'), 1);
    within(quantity('storage_gb_month'), 3 / 730);
    expect(lines.find((line) => line.meter === 'egress_gb')!.quantity).toBe('6.000000');
    // Each line priced by the price list, rounded to the cent; the total is their sum.
    for (const line of lines) {
      expect(Number(line.unit_amount_micro_eur)).toBe(PRICES[line.meter as keyof typeof PRICES]);
      expect(Number(line.amount_cents)).toBe(Math.round((Number(line.quantity) * Number(line.unit_amount_micro_eur)) / 10_000));
    }
    expect(invoice.total_cents).toBe(lines.reduce((sum, line) => sum + Number(line.amount_cents), 0));
    // Instance hours by size, as the invoice shows them.
    const { rows: sizes } = await server.pool.query(
      'SELECT size, hours::float AS hours FROM usage_by_size WHERE org_id = $1 AND month = $2::date ORDER BY size',
      [org.orgId, monthStart.toISOString().slice(0, 10)],
    );
    expect(sizes.map((row) => row.size)).toEqual([`1 vCPU, 1 GB memory, 20 GB disk`, `4 vCPU, 8 GB memory, 80 GB disk`]);

    // The page, opened from the link in the API's answer, with no credential.
    const page = await fetch(invoice.hosted_invoice_url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain(`Invoice ${invoice.id}`);
    expect(html).toContain('Metered Month');
    expect(html).toContain(`<td class="num" id="total">${(invoice.total_cents / 100).toFixed(2)}</td>`);
    for (const description of ['Instance vCPU hours', 'Public IPv4 address hours', 'Object storage egress (GB)'])
      expect(html).toContain(description);
    expect(html).toContain('6 GB');
    expect(html).toContain('4 vCPU, 8 GB memory, 80 GB disk');

    // The PDF: a real one, saying the same.
    const pdfResponse = await fetch(invoice.invoice_pdf);
    expect(pdfResponse.status).toBe(200);
    expect(pdfResponse.headers.get('content-type')).toBe('application/pdf');
    const pdf = Buffer.from(await pdfResponse.arrayBuffer());
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.subarray(-6).toString()).toContain('%%EOF');
    const text = pdfText(pdf);
    expect(text).toContain(`Invoice ${invoice.id}`);
    expect(text).toContain((invoice.total_cents / 100).toFixed(2));
    expect(text).toContain('Object storage egress (GB)');

    // The month after is billed on: the new month-to-date counts only the new month.
    const after = (await org.call('GET', '/billing')).body;
    expect(after.current_period_end).toBe(new Date(Date.UTC(monthEnd.getUTCFullYear(), monthEnd.getUTCMonth() + 1, 1)).toISOString());
    expect(after.month_to_date.egress_gb).toBe('0.000000');
    expect(after.month_to_date.estimated_cents).toBeGreaterThan(0);
    expect(after.month_to_date.estimated_cents).toBeLessThan(invoice.total_cents);
    // The usage of the closed month is exactly what the invoice bills: nothing more lands in it.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const { rows: closed } = await server.pool.query<{ meter: string; quantity: string }>(
      'SELECT meter, quantity::text FROM usage_totals WHERE org_id = $1 AND month = $2::date',
      [org.orgId, monthStart.toISOString().slice(0, 10)],
    );
    for (const row of closed) expect(lines.find((line) => line.meter === row.meter)?.quantity).toBe(row.quantity);
    await Promise.all([small, large].map((vm) => act(server, org, 'POST', `/compute/vms/${vm.id}/stop`)));
  });

  test('test clocks are an operator tool: the command refuses without TEST_CLOCKS, and no customer path moves them', async () => {
    const org = await server.createOrg('Customer');
    await expect(
      promisify(execFile)(
        process.execPath,
        [
          path.join(repoRoot, 'scripts', 'start.mjs'),
          path.join(repoRoot, 'server', 'admin', 'main.ts'),
          'clock',
          'advance',
          '--org',
          org.orgId,
          '--by',
          '32d',
        ],
        { env: { ...process.env, ...TEST_ENV, DATABASE_URL: server.databaseUrl, TEST_CLOCKS: 'false' } },
      ),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('test clocks are off') });
    for (const [method, where] of [
      ['POST', '/clock/advance'],
      ['POST', '/test-clocks'],
      ['PUT', '/clock'],
    ] as const) {
      expect((await org.call(method, where, { body: { by: '32d' } })).status).toBe(404);
    }
    expect((await server.pool.query('SELECT 1 FROM test_clocks WHERE org_id = $1', [org.orgId])).rowCount).toBe(0);
  });
});

describe('several processes on one database', () => {
  test('a finished month is invoiced exactly once, its usage counted once', async () => {
    const databaseUrl = await createTestDatabase();
    // Errors logged, so that an unexpected answer below can show why.
    const env = { TEST_CLOCKS: 'true', METERING_INTERVAL_MS: '50', SIM_LATENCY_MS: '0', LOG_LEVEL: 'error' };
    const first = await startServerProcess(databaseUrl, env);
    processes.push(first);
    const credentials = await readBootstrap(first.dataDir);
    const others = await Promise.all([startServerProcess(databaseUrl, env), startServerProcess(databaseUrl, env)]);
    processes.push(...others);
    const api = (method: string, where: string, body?: unknown, url = first.url) =>
      call(url, method, `/v1/orgs/${credentials.org_id}${where}`, { defaultKey: credentials.api_key, body });
    const requestedAt = Date.now();
    const created = await api('POST', '/compute/vms', {
      name: 'shared-1',
      image: 'ubuntu-24.04',
      region: 'fra1',
      vcpus: 2,
      memory_mb: 2048,
      disk_gb: 20,
      storage_pool: 'fra1-ssd',
      network_profile: 'fra1-standard',
    });
    // A failure here (once, in CI: a 500) says what the servers logged.
    expect(created.status, `${created.text}\n${[first, ...others].map((started) => started.output()).join('\n----\n')}`).toBe(202);
    await eventually(async () =>
      (await api('GET', `/operations/${created.body.operation.id}`)).body.state === 'succeeded' ? true : undefined,
    );
    // Metered from a sighting between the request and now; the month is closed only once one is seen.
    const meteringPool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    await meteringHasSeen(meteringPool, credentials.org_id, [['vm', created.body.vm.id]]).finally(() => meteringPool.end());
    const sightedBy = Date.now();
    // Moved forward where every process sees it at once: they race to meter and close the month.
    await admin(databaseUrl, ['clock', 'advance', '--org', credentials.org_id, '--by', `${Math.ceil(pastMonthEnd(new Date()) / 1000)}s`]);
    const invoice = await eventually(async () => {
      const { items } = (await api('GET', '/invoices', undefined, others[1].url)).body;
      return items.length >= 1 && items[0].status === 'paid' ? items[0] : undefined;
    });
    // Every process keeps running its billing run for a while.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const { rows } = await pool
      .query<{ id: string; total: string; lines: number; vcpu: string }>(
        `SELECT i.id, i.total_cents::text AS total, (SELECT count(*)::int FROM invoice_lines l WHERE l.invoice_id = i.id) AS lines,
           (SELECT quantity::text FROM usage_totals u WHERE u.org_id = i.org_id AND u.month = (i.period_start AT TIME ZONE 'UTC')::date
              AND u.meter = 'vcpu_hour') AS vcpu
         FROM invoices i WHERE i.org_id = $1`,
        [credentials.org_id],
      )
      .finally(() => pool.end());
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toBe(invoice.id);
    // vCPU, memory and disk hours: one line each.
    expect(rows[0]!.lines).toBe(3);
    // Two vCPUs from their first sighting (after the request, before the test saw it) to the
    // month's end, counted once: never twice that.
    const monthEnd = Date.parse(invoice.period_end);
    expect(Number(rows[0]!.vcpu)).toBeLessThanOrEqual((2 * (monthEnd - requestedAt)) / HOUR + ROUNDING);
    expect(Number(rows[0]!.vcpu)).toBeGreaterThanOrEqual((2 * (monthEnd - sightedBy)) / HOUR - ROUNDING);
    expect(invoice.total_cents).toBe(Number(rows[0]!.total));
  });
});
