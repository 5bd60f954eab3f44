// The QEMU driver on its own (no platform around it): operator-registered images and the public
// address pool. One guest, which never needs to boot: a blank registered disk sits in its BIOS.
// Skipped locally without QEMU; a failure in CI (.ci/run installs it).
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../../../server/config.ts';
import { PermanentBackendError } from '../../../../server/drivers/errors.ts';
import type { HypervisorDriver, ServerSpec } from '../../../../server/drivers/hypervisor.ts';
import { createQemuHypervisor } from '../../../../server/drivers/qemu/driver.ts';
import { qemuLayout } from '../../../../server/drivers/qemu/layout.ts';
import { createLogger } from '../../../../server/logging.ts';
import { repoRoot } from '../../../../scripts/lib/run.ts';

const run = promisify(execFile);

function missing(): string | undefined {
  for (const tool of ['qemu-system-x86_64', 'qemu-img', 'genisoimage']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  return undefined;
}
const absent = missing();
if (absent && (process.env.CI === 'true' || process.env.CI === '1')) {
  throw new Error(`CI runs the QEMU driver's tests, and ${absent}: .ci/run installs qemu-system-x86, qemu-utils and genisoimage`);
}
if (absent) console.warn(`QEMU driver: skipped, ${absent}`);

describe.skipIf(absent !== undefined)('the QEMU driver', { timeout: 120_000 }, () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cp-qemu-driver-'));
  const work = mkdtempSync(path.join(tmpdir(), 'cp-qemu-driver-work-'));
  const layout = qemuLayout(dataDir);
  let driver: HypervisorDriver;
  const serverId = '3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b';
  const spec: ServerSpec = {
    serverId,
    name: 'cloudy-1',
    regionId: 'fra1',
    storagePoolId: 'fra1-ssd',
    networkProfileId: 'fra1-private',
    publicNetwork: false,
    consoleType: 'serial',
    imageId: 'cloudy',
    vcpus: 1,
    memoryMb: 256,
    diskGb: 2,
    sshKeys: [],
    firewall: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }],
  };

  const register = (file: string) =>
    execFileSync('bash', [path.join(repoRoot, 'scripts', 'qemu', 'register-image.sh'), 'fra1', 'cloudy', file, dataDir]);
  const backingOf = async (file: string) =>
    (JSON.parse((await run('qemu-img', ['info', '--output=json', '-U', file])).stdout) as { 'full-backing-filename'?: string })[
      'full-backing-filename'
    ];

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', path.join(work, 'cloudy.qcow2'), '1G']);
    register(path.join(work, 'cloudy.qcow2'));
    const config = loadConfig({
      COMPUTE_DRIVER: 'qemu',
      QEMU_ACCEL: 'tcg',
      QEMU_ADDRESS_POOL: '127.0.0.200-127.0.0.201',
      QEMU_STOP_TIMEOUT_MS: '500',
    });
    driver = await createQemuHypervisor({ dataDir, config: config.qemu!, log: createLogger('silent') });
  });

  afterAll(async () => {
    await driver?.deleteServer({ serverId, name: spec.name }).catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
    if (layout.socketsDir) rmSync(layout.socketsDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  test('a registered image: the disk is an overlay on its version, booted from the disk; a new version leaves existing disks alone', async () => {
    const first = realpathSync(path.join(layout.imagesDir, 'fra1', 'cloudy.qcow2'));
    const report = await driver.createServer(spec);
    expect(report).toMatchObject({ serverId, status: 'running', addresses: { public_ipv4: [], private_ipv4: ['10.0.2.15'] } });
    const files = layout.server(serverId);
    expect(await backingOf(files.disk)).toBe(first);
    const pid = Number(readFileSync(files.pidFile, 'utf8'));
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(commandLine).not.toContain('-kernel');
    expect(commandLine).toContain('-smp');
    // A repeated create finds the same QEMU.
    await driver.createServer(spec);
    expect(Number(readFileSync(files.pidFile, 'utf8'))).toBe(pid);

    await new Promise((resolve) => setTimeout(resolve, 1_100));
    register(path.join(work, 'cloudy.qcow2'));
    const second = realpathSync(path.join(layout.imagesDir, 'fra1', 'cloudy.qcow2'));
    expect(second).not.toBe(first);
    expect(await backingOf(files.disk)).toBe(first);
    expect(existsSync(first)).toBe(true);

    await expect(
      driver.createServer({ ...spec, serverId: '4f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b', imageId: 'not-registered' }),
    ).rejects.toThrow(PermanentBackendError);
    expect(existsSync(layout.server('4f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b').dir)).toBe(false);
  });

  // Only where the CPU has no hardware virtualisation (as on CI's machines): there QEMU aborts under KVM.
  const kvmUsable = /^flags\s*:.*\b(vmx|svm)\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
  test.skipIf(kvmUsable)('QEMU_ACCEL=kvm on a host where KVM does not work: the guest runs under TCG instead', async () => {
    const kvmDataDir = mkdtempSync(path.join(tmpdir(), 'cp-qemu-kvm-'));
    const kvmConfig = loadConfig({ COMPUTE_DRIVER: 'qemu', QEMU_ACCEL: 'kvm', QEMU_STOP_TIMEOUT_MS: '500' }).qemu!;
    const kvmDriver = await createQemuHypervisor({ dataDir: kvmDataDir, config: kvmConfig, log: createLogger('silent') });
    const kvmLayout = qemuLayout(kvmDataDir);
    try {
      execFileSync('bash', [
        path.join(repoRoot, 'scripts', 'qemu', 'register-image.sh'),
        'fra1',
        'cloudy-kvm',
        path.join(work, 'cloudy.qcow2'),
        kvmDataDir,
      ]);
      expect((await kvmDriver.createServer({ ...spec, imageId: 'cloudy-kvm' })).status).toBe('running');
      const record = JSON.parse(readFileSync(kvmLayout.server(serverId).record, 'utf8')) as { accelerator: string };
      expect(record.accelerator).toBe('tcg');
      const pid = Number(readFileSync(kvmLayout.server(serverId).pidFile, 'utf8'));
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain('tcg');
    } finally {
      await kvmDriver.deleteServer({ serverId, name: spec.name });
      rmSync(kvmDataDir, { recursive: true, force: true });
      if (kvmLayout.socketsDir) rmSync(kvmLayout.socketsDir, { recursive: true, force: true });
    }
  });

  test('the address pool: one address per id, none when it is used up, and a port the host has taken is forwarded from another', async () => {
    const a = await driver.allocateAddress({ addressId: 'a', regionId: 'fra1' });
    expect(await driver.allocateAddress({ addressId: 'a', regionId: 'fra1' })).toEqual(a);
    const b = await driver.allocateAddress({ addressId: 'b', regionId: 'fra1' });
    expect([a.address, b.address].sort()).toEqual(['127.0.0.200', '127.0.0.201']);
    await expect(driver.allocateAddress({ addressId: 'c', regionId: 'fra1' })).rejects.toThrow(PermanentBackendError);

    // Another program holds port 22 of b's address: the guest's port 22 is forwarded from another port.
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen({ host: b.address, port: 22 }, resolve));
    try {
      const attached = await driver.attachAddress({ addressId: 'b' }, { serverId, name: spec.name });
      expect(attached.addresses.public_ipv4).toEqual([b.address]);
      const record = JSON.parse(readFileSync(layout.server(serverId).record, 'utf8')) as {
        forwards: Array<{ address: string; hostPort: number; guestPort: number }>;
      };
      const forward = record.forwards.find((entry) => entry.address === b.address && entry.guestPort === 22);
      expect(forward?.hostPort).toBeGreaterThan(1023);
      // QEMU listens there: the forward is live.
      await new Promise<void>((resolve, reject) => {
        const probe = createServer();
        probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve() : reject(error)));
        probe.listen({ host: b.address, port: forward!.hostPort }, () =>
          probe.close(() => reject(new Error('nothing listens on the forwarded port'))),
        );
      });
    } finally {
      squatter.close();
    }
    expect(await driver.detachAddress({ addressId: 'b' }, { serverId, name: spec.name })).toMatchObject({ addresses: { public_ipv4: [] } });
    await driver.releaseAddress({ addressId: 'b' });
    expect((await driver.allocateAddress({ addressId: 'c', regionId: 'fra1' })).address).toBe(b.address);

    // Rules and addresses set while the server is stopped are forwarded by its next start.
    const stopped = await driver.stopServer({ serverId, name: spec.name });
    expect(stopped.status).toBe('stopped');
    await driver.attachAddress({ addressId: 'a' }, { serverId, name: spec.name });
    await driver.setFirewall({ serverId, name: spec.name }, [{ protocol: 'tcp', ports: '8080', sources: ['127.0.0.0/8'] }]);
    expect((await driver.startServer({ serverId, name: spec.name })).addresses.public_ipv4).toEqual([a.address]);
    const started = JSON.parse(readFileSync(layout.server(serverId).record, 'utf8')) as {
      forwards: Array<{ address: string; guestPort: number }>;
    };
    expect(started.forwards.map((forward) => `${forward.address}:${forward.guestPort}`)).toEqual([`${a.address}:8080`]);
    await driver.detachAddress({ addressId: 'a' }, { serverId, name: spec.name });
    await driver.releaseAddress({ addressId: 'a' });
    await driver.releaseAddress({ addressId: 'c' });

    await driver.deleteServer({ serverId, name: spec.name });
    expect(existsSync(layout.server(serverId).dir)).toBe(false);
    expect(await driver.describeServers([serverId])).toEqual([]);
  });
});
