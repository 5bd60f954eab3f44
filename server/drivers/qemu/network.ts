import { createSocket } from 'node:dgram';
import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import type { FirewallRuleSpec } from '../hypervisor.ts';
import type { QemuLayout } from './layout.ts';
import { createJsonExclusively, PARTIAL_SUFFIX, writeJsonAtomically, type Forward } from './records.ts';

/** An address of the pool in use: a public IP of the platform, or a server's own public address. */
export interface AddressEntry {
  address: string;
  addressId: string;
  regionId: string;
  /** The server it is routed to, if any. */
  serverId: string | null;
  allocatedAt: string;
}

/** The address id of a server's own public address (a public network profile gives it one). */
export const primaryAddressId = (serverId: string) => `server:${serverId}`;

/**
 * The addresses public IPs are made of: a range of host addresses (in development loopback
 * ones, 127.0.0.2 to 127.0.0.254, each a host of its own to the clients on this machine). An
 * address in use is a file named by it, created exclusively: two processes can never take the
 * same one, and one taken survives a restart of the server. The file never holds half an entry
 * (createJsonExclusively): with an exclusive create followed by a write, a process killed between
 * the two left an empty file that no one could read or release, and the address was lost to the
 * pool (a CI run's QEMU test found one after a server killed mid-create).
 */
export function createAddressPool(layout: QemuLayout, range: { first: string; last: string }) {
  const prefix = range.first.split('.').slice(0, 3).join('.');
  const firstHost = Number(range.first.split('.')[3]);
  const lastHost = Number(range.last.split('.')[3]);
  const fileOf = (address: string) => path.join(layout.addressesDir, `${address}.json`);
  const LEFTOVER_AGE_MS = 60_000;

  async function entries(): Promise<AddressEntry[]> {
    let names: string[];
    try {
      names = await readdir(layout.addressesDir);
    } catch {
      return [];
    }
    const read = await Promise.all(
      names
        .filter((name) => name.endsWith('.json'))
        .map(async (name) => {
          try {
            return JSON.parse(await readFile(path.join(layout.addressesDir, name), 'utf8')) as AddressEntry;
          } catch {
            // Released meanwhile.
            return undefined;
          }
        }),
    );
    return read.filter((entry): entry is AddressEntry => entry !== undefined).sort((a, b) => a.allocatedAt.localeCompare(b.allocatedAt));
  }

  const byId = async (addressId: string) => (await entries()).find((entry) => entry.addressId === addressId);

  return {
    entries,
    byId,

    /** Takes a free address for `addressId`; the one it already has when asked again. Undefined when the pool is exhausted. */
    async allocate(addressId: string, regionId: string, serverId: string | null): Promise<AddressEntry | undefined> {
      const existing = await byId(addressId);
      if (existing) return existing;
      await mkdir(layout.addressesDir, { recursive: true });
      for (let host = firstHost; host <= lastHost; host++) {
        const entry: AddressEntry = { address: `${prefix}.${host}`, addressId, regionId, serverId, allocatedAt: new Date().toISOString() };
        if (await createJsonExclusively(fileOf(entry.address), entry)) return entry;
      }
      return undefined;
    },

    /**
     * Removes what a process killed while writing here left (run at the driver's start): the files
     * written beside their place (records.ts), and the empty files the exclusive create of earlier
     * versions left. Only those a minute old: no write takes that long, and another process
     * on this folder (the admin command beside a running server) may be writing now.
     */
    async sweep(): Promise<void> {
      const now = Date.now();
      let names: string[];
      try {
        names = await readdir(layout.addressesDir);
      } catch {
        return;
      }
      for (const name of names) {
        const unfinished = name.endsWith(PARTIAL_SUFFIX);
        if (!unfinished && !name.endsWith('.json')) continue;
        const file = path.join(layout.addressesDir, name);
        const found = await stat(file).catch(() => undefined);
        if (!found || now - found.mtimeMs < LEFTOVER_AGE_MS) continue;
        if (unfinished || found.size === 0) await rm(file, { force: true });
      }
    },

    /** Routes the address to a server (or to none). */
    async route(entry: AddressEntry, serverId: string | null): Promise<void> {
      await writeJsonAtomically(fileOf(entry.address), { ...entry, serverId });
    },

    async release(entry: AddressEntry): Promise<void> {
      await rm(fileOf(entry.address), { force: true });
    },
  };
}

export type AddressPool = ReturnType<typeof createAddressPool>;

/** Ports forwarded per address at most: user-mode networking forwards port by port, so a wide range is cut here. */
export const MAX_FORWARDED_PORTS = 64;

/**
 * The ports the firewall opens to clients of this host. Every client of a loopback address comes
 * from 127.0.0.1, so a rule opens its ports when one of its sources holds 127.0.0.1 (`0.0.0.0/0`
 * does; `203.0.113.0/24` does not, and its ports stay closed here, as they would be to anyone
 * outside that network). ICMP cannot be forwarded: the host answers pings to its own addresses.
 */
export function openPorts(rules: FirewallRuleSpec[]): Array<{ protocol: 'tcp' | 'udp'; port: number }> {
  const open: Array<{ protocol: 'tcp' | 'udp'; port: number }> = [];
  const seen = new Set<string>();
  for (const rule of rules) {
    if (rule.protocol === 'icmp' || rule.ports === null || !rule.sources.some(holdsLoopbackClient)) continue;
    const [first, last = first] = rule.ports.split('-').map(Number) as [number, number?];
    for (let port = first; port <= last && open.length < MAX_FORWARDED_PORTS; port++) {
      const key = `${rule.protocol}:${port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      open.push({ protocol: rule.protocol, port });
    }
  }
  return open;
}

function holdsLoopbackClient(cidr: string): boolean {
  const [address = '', prefixText = ''] = cidr.split('/');
  const octets = address.split('.').map(Number);
  if (octets.length !== 4) return false;
  const prefix = Number(prefixText);
  const value = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  const client = 127 * 2 ** 24 + 1;
  const size = 2 ** (32 - prefix);
  return Math.floor(value / size) === Math.floor(client / size);
}

/**
 * The forwards that carry the open ports of these addresses to the guest. A port forwarded
 * already keeps its host port. A new one takes the guest's own port on the address (so that
 * `ssh root@<address>` reaches port 22), unless the host cannot bind it (another program has it,
 * or binding ports below 1024 needs privileges this process lacks): then the driver picks a free
 * port of that address, and says which in `moved`.
 */
export async function planForwards(
  addresses: string[],
  ports: Array<{ protocol: 'tcp' | 'udp'; port: number }>,
  current: Forward[],
): Promise<{ forwards: Forward[]; moved: Forward[] }> {
  const forwards: Forward[] = [];
  const moved: Forward[] = [];
  for (const address of addresses) {
    for (const { protocol, port } of ports) {
      const kept = current.find((forward) => forward.protocol === protocol && forward.address === address && forward.guestPort === port);
      if (kept) {
        forwards.push(kept);
        continue;
      }
      const hostPort = (await bindable(protocol, address, port)) ? port : await freePort(protocol, address);
      const forward = { protocol, address, hostPort, guestPort: port };
      forwards.push(forward);
      if (hostPort !== port) moved.push(forward);
    }
  }
  return { forwards, moved };
}

/** Whether this host can bind the port on the address now (it is released at once, for QEMU to take). */
function bindable(protocol: 'tcp' | 'udp', address: string, port: number): Promise<boolean> {
  return bindOnce(protocol, address, port).then(
    () => true,
    () => false,
  );
}

function freePort(protocol: 'tcp' | 'udp', address: string): Promise<number> {
  return bindOnce(protocol, address, 0);
}

function bindOnce(protocol: 'tcp' | 'udp', address: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    if (protocol === 'udp') {
      const socket = createSocket('udp4');
      socket.once('error', reject);
      socket.bind({ address, port, exclusive: true }, () => {
        const bound = socket.address().port;
        socket.close(() => resolve(bound));
      });
      return;
    }
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: address, port, exclusive: true }, () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}
