// The compute behaviour on real guests: COMPUTE_DRIVER=qemu, the tiny test image
// (scripts/qemu/build-test-image.sh), a server as a process so that it can be killed. At most two
// guests run at once; everything stays on loopback. Locally, without QEMU or the test image, the
// file is skipped and says so; in CI (CI=true) that is a failure: .ci/run installs and builds both.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { qemuLayout } from '../../../../server/drivers/qemu/layout.ts';
import { collectConsoleUrl, connectConsole } from '../../../support/console-client.ts';
import { eventually } from '../../../support/eventually.ts';
import { procFiles } from '../../../support/processes.ts';
import {
  call,
  createTestDatabase,
  readBootstrap,
  startServerProcess,
  waitForOperation,
  type CallOptions,
  type TestOrg,
  type TestServer,
} from '../../../support/server.ts';
import type { VmOut } from '../../areas/compute/fixtures.ts';

const run = promisify(execFile);
const testImageDir =
  process.env.QEMU_TEST_IMAGE_DIR ??
  path.join(
    process.env.QEMU_CACHE_DIR ??
      path.join(process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? '/root', '.cache'), 'cloud-platform', 'qemu'),
    'test-image',
  );

function missing(): string | undefined {
  for (const tool of ['qemu-system-x86_64', 'qemu-img', 'genisoimage', 'ssh', 'ssh-keygen']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  if (!existsSync(path.join(testImageDir, 'image.json')))
    return `the test image is not built in ${testImageDir} (scripts/qemu/build-test-image.sh)`;
  return undefined;
}
const absent = missing();
if (absent && (process.env.CI === 'true' || process.env.CI === '1')) {
  throw new Error(
    `CI runs the QEMU driver's tests, and ${absent}: .ci/run installs qemu-system-x86, qemu-utils, genisoimage, openssh-client and builds the image`,
  );
}
if (absent) console.warn(`QEMU driver: skipped, ${absent}`);

/** Guests take a while under TCG on two shared cores: a boot is seconds, several at once more. */
const BOOT_MS = 120_000;

describe.skipIf(absent !== undefined)('COMPUTE_DRIVER=qemu', { timeout: 600_000 }, () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cp-qemu-'));
  const keyDir = mkdtempSync(path.join(tmpdir(), 'cp-qemu-key-'));
  const keyFile = path.join(keyDir, 'id_ed25519');
  let databaseUrl: string;
  let server: Awaited<ReturnType<typeof startServerProcess>>;
  let org: TestOrg;
  const env = {
    COMPUTE_DRIVER: 'qemu',
    QEMU_TEST_IMAGE_DIR: testImageDir,
    QEMU_STOP_TIMEOUT_MS: '30000',
    RECONCILE_INTERVAL_MS: '500',
    LOG_LEVEL: 'warn',
  };

  async function startServer(): Promise<void> {
    server = await startServerProcess(databaseUrl, env, { dataDir });
    const credentials = await readBootstrap(dataDir);
    org = {
      orgId: credentials.org_id,
      ownerKey: credentials.api_key,
      ownerMemberId: '',
      call: (method: string, orgPath: string, options: CallOptions = {}) =>
        call(server.url, method, `/v1/orgs/${credentials.org_id}${orgPath}`, { ...options, defaultKey: credentials.api_key }),
      memberKey: () => Promise.reject(new Error('not needed here')),
    };
  }

  /** What the console helpers need of a test server. */
  const asTestServer = () => ({ waitForOperation: (o: TestOrg, id: string, ms?: number) => waitForOperation(o, id, ms) }) as TestServer;

  beforeAll(async () => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile]);
    databaseUrl = await createTestDatabase();
    await startServer();
    const created = await org.call('POST', '/compute/ssh-keys', {
      body: { name: 'laptop', public_key: readFileSync(`${keyFile}.pub`, 'utf8').trim() },
    });
    expect(created.status).toBe(201);
  }, BOOT_MS);

  afterAll(async () => {
    await server?.stop();
    // Whatever a failed test left running is ended by its pid, then its files go.
    for (const pid of qemuPids(dataDir)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    const { socketsDir } = qemuLayout(dataDir);
    if (socketsDir) rmSync(socketsDir, { recursive: true, force: true });
    rmSync(keyDir, { recursive: true, force: true });
  });

  async function operation(response: { status: number; body: any; text: string }): Promise<any> {
    expect(response.status, response.text).toBe(202);
    const done = await waitForOperation(org, response.body.operation.id, BOOT_MS);
    expect(done.state, JSON.stringify(done)).toBe('succeeded');
    return done;
  }

  async function createVm(name: string): Promise<VmOut> {
    const request = {
      name,
      image: 'tiny',
      region: 'fra1',
      vcpus: 1,
      memory_mb: 512,
      disk_gb: 10,
      storage_pool: 'fra1-ssd',
      network_profile: 'fra1-standard',
      ssh_keys: ['laptop'],
    };
    const created = await org.call('POST', '/compute/vms', { body: request });
    await operation(created);
    return getVm(created.body.vm.id);
  }

  const getVm = async (id: string) => (await org.call('GET', `/compute/vms/${id}`)).body as VmOut;

  /** The host port that reaches the guest's port 22 on `address` (22 itself, unless the host could not bind it). */
  function sshPort(vmId: string, address: string): number {
    const record = JSON.parse(readFileSync(path.join(dataDir, 'qemu', 'servers', vmId, 'server.json'), 'utf8')) as {
      forwards: Array<{ address: string; hostPort: number; guestPort: number }>;
    };
    const forward = record.forwards.find((entry) => entry.address === address && entry.guestPort === 22);
    if (!forward) throw new Error(`port 22 of ${address} is not forwarded`);
    return forward.hostPort;
  }

  /** Runs a command over SSH as root with the instance's key; retried while the guest is still booting. */
  async function ssh(address: string, port: number, command: string, timeoutMs = BOOT_MS): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const { stdout } = await run(
          'ssh',
          [
            ...['-i', keyFile, '-p', String(port), '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no'],
            ...['-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=error', '-o', 'ConnectTimeout=5'],
            `root@${address}`,
            command,
          ],
          { timeout: 20_000 },
        );
        return stdout.trim();
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  async function openFirewallForSsh(vmId: string): Promise<void> {
    await operation(
      await org.call('PUT', `/compute/vms/${vmId}/firewall`, {
        body: { inbound: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }] },
      }),
    );
  }

  test('an instance takes an SSH login with its key on its public address once the firewall allows port 22, and refuses it before', async () => {
    const vm = await createVm('web-1');
    expect(vm).toMatchObject({ state: 'running' });
    const reported = await eventually(async () => {
      const read = await getVm(vm.id);
      return read.observed_status === 'running' && read.observed_addresses?.public_ipv4.length ? read : undefined;
    }, 'the instance to be observed running');
    const address = reported.observed_addresses!.public_ipv4[0]!;
    expect(address).toMatch(/^127\.0\.0\.\d+$/);
    expect(qemuPids(dataDir, vm.id)).toHaveLength(1);

    // No inbound rule: nothing listens for the guest's port 22.
    expect(await tcpConnects(address, 22)).toBe(false);
    await openFirewallForSsh(vm.id);
    const port = sshPort(vm.id, address);
    if (process.getuid?.() === 0) expect(port).toBe(22);
    expect(await ssh(address, port, 'hostname')).toBe('web-1');
    // Closed again: refused again.
    await operation(await org.call('PUT', `/compute/vms/${vm.id}/firewall`, { body: { inbound: [] } }));
    expect(await tcpConnects(address, port)).toBe(false);
    await openFirewallForSsh(vm.id);
  });

  test("the console is the guest's serial port: a typed command's answer comes back", async () => {
    const vm = await vmNamed('web-1');
    const consoleUrl = await collectConsoleUrl(asTestServer(), org, vm.id);
    const terminal = await connectConsole(consoleUrl);
    try {
      await terminal.waitFor('# ', { timeoutMs: BOOT_MS });
      const from = terminal.output().length;
      terminal.type('echo answer-$((6*7))\r');
      // The shell's answer, not the echo of what was typed (which shows the expression).
      await terminal.waitFor('answer-42', { from, timeoutMs: 30_000 });
    } finally {
      terminal.close();
    }
  });

  test('stop, start, reboot, resize, rebuild, rescue and unrescue, each read back from QEMU', async () => {
    const vm = await vmNamed('web-1');
    const address = vm.observed_addresses!.public_ipv4[0]!;
    const sshHere = (command: string) => ssh(address, sshPort(vm.id, address), command);
    await sshHere('true');

    await operation(await org.call('POST', `/compute/vms/${vm.id}/stop`));
    expect(await getVm(vm.id)).toMatchObject({ state: 'stopped', observed_status: 'stopped' });
    expect(qemuPids(dataDir, vm.id)).toHaveLength(0);

    await operation(await org.call('POST', `/compute/vms/${vm.id}/start`));
    expect(await getVm(vm.id)).toMatchObject({ state: 'running', observed_status: 'running' });
    // The disk outlives a reboot: a marker written on it is there after one.
    await sshHere('echo disk-marker | dd of=/dev/vda conv=fsync 2>/dev/null');
    await operation(await org.call('POST', `/compute/vms/${vm.id}/reboot`));
    expect(await sshHere('head -c 11 /dev/vda')).toBe('disk-marker');

    await operation(await org.call('POST', `/compute/vms/${vm.id}/resize`, { body: { vcpus: 2, memory_mb: 1024, disk_gb: 12 } }));
    expect(await getVm(vm.id)).toMatchObject({ state: 'running', vcpus: 2, disk_gb: 12, observed_status: 'running' });
    expect(await sshHere('nproc; cat /sys/block/vda/size')).toBe(`2\n${(12 * 2 ** 30) / 512}`);

    // A rebuild is a fresh disk: the marker is gone.
    await operation(await org.call('POST', `/compute/vms/${vm.id}/rebuild`, { body: { image_id: 'tiny' } }));
    expect(await sshHere('head -c 11 /dev/vda | tr -d "\\000" | wc -c')).toBe('0');

    await operation(await org.call('POST', `/compute/vms/${vm.id}/rescue`));
    expect(await getVm(vm.id)).toMatchObject({ state: 'rescue', observed_status: 'rescue' });
    expect(await sshHere('hostname; cat /sys/block/vda/size')).toBe(`rescue\n${(12 * 2 ** 30) / 512}`);
    await operation(await org.call('POST', `/compute/vms/${vm.id}/unrescue`));
    expect(await getVm(vm.id)).toMatchObject({ state: 'running', observed_status: 'running' });
    expect(await sshHere('hostname')).toBe('web-1');
    expect(qemuPids(dataDir, vm.id)).toHaveLength(1);
  });

  test('a guest that powers itself off is stopped, and its time no longer metered', async () => {
    const vm = await vmNamed('web-1');
    const address = vm.observed_addresses!.public_ipv4[0]!;
    // In the background, so that the login ends before the guest goes (a retried `poweroff` would wait for a guest that is gone).
    await ssh(address, sshPort(vm.id, address), 'setsid sh -c "sleep 1; poweroff" </dev/null >/dev/null 2>&1 &');
    const stopped = await eventually(
      async () => {
        const read = await getVm(vm.id);
        return read.state === 'stopped' ? read : undefined;
      },
      'the instance to be stopped',
      30_000,
    );
    expect(stopped).toMatchObject({ desired_state: 'stopped', observed_status: 'stopped' });
    // Metering follows the powered run: none is open while the guest is off.
    const database = new pg.Client({ connectionString: databaseUrl });
    await database.connect();
    try {
      expect((await database.query('SELECT powered_since FROM vms WHERE id = $1', [vm.id])).rows[0].powered_since).toBeNull();
    } finally {
      await database.end();
    }
    await eventually(async () => (qemuPids(dataDir, vm.id).length === 0 ? true : undefined), 'its QEMU to end', 30_000);
    await operation(await org.call('POST', `/compute/vms/${vm.id}/start`));
    expect(await getVm(vm.id)).toMatchObject({ state: 'running', observed_status: 'running' });
  });

  test('a server killed in the middle of a create and of a stop: after a restart, one QEMU per instance, none left over', async () => {
    const created = await org.call('POST', '/compute/vms', {
      body: {
        name: 'web-2',
        image: 'tiny',
        region: 'fra1',
        vcpus: 1,
        memory_mb: 512,
        disk_gb: 10,
        storage_pool: 'fra1-ssd',
        network_profile: 'fra1-standard',
        ssh_keys: ['laptop'],
      },
    });
    expect(created.status).toBe(202);
    const id = created.body.vm.id as string;
    // Killed once the driver has begun: its folder exists.
    await eventually(async () => (existsSync(path.join(dataDir, 'qemu', 'servers', id)) ? true : undefined), 'the driver to begin', 30_000);
    killServer();
    await startServer();
    await waitForOperation(org, created.body.operation.id, BOOT_MS);
    expect(await getVm(id)).toMatchObject({ state: 'running', observed_status: 'running' });
    expect(qemuPids(dataDir, id)).toHaveLength(1);

    const web1 = await vmNamed('web-1');
    const stop = await org.call('POST', `/compute/vms/${web1.id}/stop`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    killServer();
    // The guests run on without the server.
    expect(qemuPids(dataDir, id)).toHaveLength(1);
    await startServer();
    await waitForOperation(org, stop.body.operation.id, BOOT_MS);
    expect(await getVm(web1.id)).toMatchObject({ state: 'stopped', observed_status: 'stopped' });
    expect(qemuPids(dataDir, web1.id)).toHaveLength(0);
    expect(qemuPids(dataDir)).toHaveLength(1);
  });

  test('delete leaves no process, no file and no address behind', async () => {
    for (const vm of (await org.call('GET', '/compute/vms')).body.items as VmOut[]) {
      await operation(await org.call('DELETE', `/compute/vms/${vm.id}`));
      expect((await org.call('GET', `/compute/vms/${vm.id}`)).status).toBe(404);
    }
    expect(qemuPids(dataDir)).toEqual([]);
    expect(readdirSync(path.join(dataDir, 'qemu', 'servers'))).toEqual([]);
    expect(readdirSync(path.join(dataDir, 'qemu', 'addresses'))).toEqual([]);
    const { socketsDir } = qemuLayout(dataDir);
    if (socketsDir) expect(readdirSync(socketsDir)).toEqual([]);
  });

  async function vmNamed(name: string): Promise<VmOut> {
    const items = (await org.call('GET', '/compute/vms')).body.items as VmOut[];
    const found = items.find((vm) => vm.name === name);
    if (!found) throw new Error(`no instance ${name}`);
    return found;
  }

  /** A crash: the server's whole process group, at once. */
  function killServer(): void {
    process.kill(-server.child.pid!, 'SIGKILL');
  }
});

/** The QEMU processes of the servers under `dataDir` (or of one server), found by their command line. */
function qemuPids(dataDir: string, serverId?: string): number[] {
  const needle = path.join(dataDir, 'qemu', 'servers', serverId ?? '');
  return [...procFiles('cmdline')]
    .filter(([, commandLine]) => commandLine.startsWith('qemu-system') && commandLine.includes(needle))
    .map(([pid]) => pid);
}

function tcpConnects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(3_000);
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(false));
  });
}
