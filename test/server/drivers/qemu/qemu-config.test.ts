// The QEMU driver's decisions that need no QEMU: which ports a firewall opens to this host's
// clients, what the NoCloud seed tells a guest, the command line a server runs with, where its
// sockets go, and the pool of public addresses on disk. (The driver on real guests:
// qemu.system.test.ts and qemu-driver.system.test.ts.)
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../../../server/config.ts';
import { qemuLayout } from '../../../../server/drivers/qemu/layout.ts';
import { createAddressPool, MAX_FORWARDED_PORTS, openPorts } from '../../../../server/drivers/qemu/network.ts';
import { qemuArguments } from '../../../../server/drivers/qemu/processes.ts';
import { seedFiles } from '../../../../server/drivers/qemu/seed.ts';

describe('the ports a firewall opens on a loopback address', () => {
  test('a rule opens its ports when a source holds the clients of this host (127.0.0.1), and only then', () => {
    expect(
      openPorts([
        { protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] },
        { protocol: 'tcp', ports: '80', sources: ['127.0.0.0/8'] },
        { protocol: 'tcp', ports: '443', sources: ['203.0.113.0/24', '::/0'] },
        { protocol: 'udp', ports: '53', sources: ['127.0.0.1/32'] },
        { protocol: 'icmp', ports: null, sources: ['0.0.0.0/0'] },
      ]),
    ).toEqual([
      { protocol: 'tcp', port: 22 },
      { protocol: 'tcp', port: 80 },
      { protocol: 'udp', port: 53 },
    ]);
  });

  test('no rule, no port; a port allowed twice is forwarded once; a wide range is cut', () => {
    expect(openPorts([])).toEqual([]);
    expect(
      openPorts([
        { protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] },
        { protocol: 'tcp', ports: '20-23', sources: ['0.0.0.0/0'] },
      ]).map((open) => open.port),
    ).toEqual([22, 20, 21, 23]);
    expect(openPorts([{ protocol: 'tcp', ports: '1-65535', sources: ['0.0.0.0/0'] }])).toHaveLength(MAX_FORWARDED_PORTS);
  });
});

describe('the NoCloud seed', () => {
  test('names the instance and carries its keys, root allowed to log in by key only', () => {
    const { metaData, userData } = seedFiles({
      serverId: '3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b',
      name: 'web-1',
      sshKeys: [{ name: 'laptop', publicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB alice@laptop "home"\n' }],
    });
    expect(metaData).toBe('instance-id: "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"\nlocal-hostname: "web-1"\n');
    expect(userData.split('\n')).toEqual([
      '#cloud-config',
      'hostname: "web-1"',
      'disable_root: false',
      'ssh_pwauth: false',
      'ssh_authorized_keys:',
      '  - "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB alice@laptop \\"home\\""',
      '',
    ]);
    expect(seedFiles({ serverId: 'x', name: 'bare', sshKeys: [] }).userData).toContain('ssh_authorized_keys: []\n');
  });
});

describe("a server's QEMU", () => {
  const files = qemuLayout('/srv/cloud,data').server('3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b');

  test('boots the test image directly, forwards the open ports, and doubles commas in paths', () => {
    const args = qemuArguments({
      files,
      name: 'web-1',
      vcpus: 2,
      memoryMb: 1024,
      accelerator: 'tcg',
      kernel: { kernel: '/img/vmlinux', initrd: '/img/initramfs.cpio.gz', append: 'console=ttyS0' },
      forwards: [{ protocol: 'tcp', address: '127.0.0.2', hostPort: 22, guestPort: 22 }],
    });
    const after = (flag: string) => args[args.indexOf(flag) + 1];
    expect(after('-accel')).toBe('tcg');
    expect(after('-smp')).toBe('2');
    expect(after('-m')).toBe('1024');
    expect(after('-netdev')).toBe('user,id=net0,restrict=on,hostfwd=tcp:127.0.0.2:22-:22');
    expect(after('-kernel')).toBe('/img/vmlinux');
    expect(args).toContain('-daemonize');
    expect(args).toContain('-no-shutdown');
    expect(after('-pidfile')).toBe('/srv/cloud,data/qemu/servers/3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b/qemu.pid');
    expect(args.find((arg) => arg.startsWith('file=/srv/cloud,,data/qemu/servers/') && arg.includes('disk.qcow2'))).toBeDefined();
  });

  test('a registered image boots from its disk under KVM with the host CPU', () => {
    const args = qemuArguments({ files, name: 'web-1', vcpus: 1, memoryMb: 512, accelerator: 'kvm', kernel: undefined, forwards: [] });
    expect(args).not.toContain('-kernel');
    expect(args[args.indexOf('-cpu') + 1]).toBe('host');
    expect(args[args.indexOf('-netdev') + 1]).toBe('user,id=net0,restrict=on');
  });

  test('sockets stay in the server folder unless DATA_DIR is too long for a socket path', () => {
    expect(files.qmpSocket).toBe('/srv/cloud,data/qemu/servers/3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b/qmp.sock');
    const long = qemuLayout(`/srv/${'d'.repeat(60)}`);
    const server = long.server('3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b');
    expect(server.serialSocket).toMatch(/^\/tmp\/cloud-platform-qemu-[0-9a-f]{16}\/3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b\/serial\.sock$/);
    expect(Buffer.byteLength(server.serialSocket)).toBeLessThanOrEqual(107);
    // The same folder after a restart: running guests are found again.
    expect(qemuLayout(`/srv/${'d'.repeat(60)}`).socketsDir).toBe(long.socketsDir);
    expect(() => long.server('../etc')).toThrow();
  });
});

describe('COMPUTE_DRIVER=qemu settings', () => {
  test('defaults, and a bad address pool stops the start naming the variable', () => {
    const config = loadConfig({ COMPUTE_DRIVER: 'qemu', HOME: '/home/ops' });
    expect(config.drivers.compute).toBe('qemu');
    expect(config.qemu).toMatchObject({ accel: 'auto', addressPool: { first: '127.0.0.2', last: '127.0.0.254' }, stopTimeoutMs: 30_000 });
    expect(config.catalogueFile).toMatch(/server\/drivers\/qemu\/catalogue\.json$/);
    expect(loadConfig({}).qemu).toBeUndefined();
    expect(() => loadConfig({ COMPUTE_DRIVER: 'qemu', QEMU_ADDRESS_POOL: '127.0.0.2-127.0.1.9' })).toThrow(ConfigError);
    expect(() => loadConfig({ COMPUTE_DRIVER: 'qemu', QEMU_ADDRESS_POOL: '127.0.0.9-127.0.0.2' })).toThrow(/QEMU_ADDRESS_POOL/);
    expect(() => loadConfig({ COMPUTE_DRIVER: 'libvirt' })).toThrow(/COMPUTE_DRIVER must be one of simulator, qemu/);
  });
});

describe('the pool of public addresses', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cp-qemu-addresses-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const layout = qemuLayout(dataDir);
  const pool = createAddressPool(layout, { first: '127.0.0.2', last: '127.0.0.4' });
  const files = () => readdirSync(layout.addressesDir).sort();

  test('each address is a whole file of its own; an id asked again keeps its address; the pool runs out', async () => {
    const [a, b] = await Promise.all([pool.allocate('a', 'fra1', null), pool.allocate('b', 'fra1', 'server-1')]);
    expect(new Set([a!.address, b!.address]).size).toBe(2);
    expect((await pool.allocate('a', 'fra1', null))!.address).toBe(a!.address);
    expect(files()).toEqual([`${a!.address}.json`, `${b!.address}.json`].sort());
    expect(JSON.parse(readFileSync(path.join(layout.addressesDir, `${b!.address}.json`), 'utf8'))).toMatchObject({
      addressId: 'b',
      serverId: 'server-1',
    });
    expect(await pool.allocate('c', 'fra1', null)).toMatchObject({ address: '127.0.0.4' });
    expect(await pool.allocate('d', 'fra1', null)).toBeUndefined();
    for (const entry of await pool.entries()) await pool.release(entry);
    expect(files()).toEqual([]);
  });

  test('what a process killed mid-allocation left is swept at the next start, and its address taken again', async () => {
    mkdirSync(layout.addressesDir, { recursive: true });
    // An earlier version's exclusive create, killed before its write: an empty file no one could read.
    const empty = path.join(layout.addressesDir, '127.0.0.2.json');
    const allocating = path.join(layout.addressesDir, '127.0.0.3.json.01234567.partial');
    const routing = path.join(layout.addressesDir, '127.0.0.4.json.89abcdef.partial');
    writeFileSync(empty, '');
    writeFileSync(allocating, '{"address": "127.0.0.3"');
    writeFileSync(routing, '{"address": "127.0.0.4", "serverId"');
    // Fresh, they may be another process's allocation under way: left alone.
    await pool.sweep();
    expect(files()).toEqual(['127.0.0.2.json', '127.0.0.3.json.01234567.partial', '127.0.0.4.json.89abcdef.partial']);
    const anHourAgo = new Date(Date.now() - 3_600_000);
    for (const file of [empty, allocating, routing]) utimesSync(file, anHourAgo, anHourAgo);
    await pool.sweep();
    expect(files()).toEqual([]);
    expect(await pool.allocate('e', 'fra1', null)).toMatchObject({ address: '127.0.0.2' });
  });
});
