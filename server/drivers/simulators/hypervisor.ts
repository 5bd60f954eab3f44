import { batchedCall } from '../../db/batched-lookup.ts';
import type { Pool, Queryable } from '../../db/pool.ts';
import { columnsOf, prepared, runPrepared } from '../../db/statements.ts';
import { PermanentBackendError } from '../errors.ts';
import type { ConsoleAttachment, ConsoleSink, HypervisorDriver, PowerStatus, ServerRef, ServerReport, ServerSpec } from '../hypervisor.ts';
import { createSerialConsole } from './serial-console.ts';
import type { SimulatorDependencies } from './dependencies.ts';
import { simulatedLatency } from './latency.ts';

interface ServerRow {
  server_id: string;
  name: string;
  region_id: string;
  image_id: string;
  vcpus: number;
  memory_mb: number;
  boots: number;
  console_type: 'vnc' | 'serial';
  power: PowerStatus;
  private_ipv4: string;
  public_ipv4: string | null;
  ipv6: string | null;
  disk_gb: number;
}

/**
 * A simulated hypervisor: servers and addresses live in the sim_* tables, every call waits the
 * configured latency and may fail by a SIM_FAULTS rule (`hypervisor.<method>@<subject glob>`,
 * the subject being the server's name, or the public IP id for allocate and release). Calls are
 * idempotent by server id and address id.
 *
 * Addresses come from benchmarking ranges (RFC 2544) and the documentation prefix for IPv6, so a
 * simulated address is never someone's real one: servers get 10.x private addresses and, on a
 * public network profile, one of 198.18.0.0/16 and 2001:db8::/32; public IPs come from
 * 198.19.0.0/16.
 */
export function createHypervisorSimulator({ pool, latencyMs, faults }: SimulatorDependencies): HypervisorDriver {
  const call = async (method: string, subject: string): Promise<void> => {
    await simulatedLatency(latencyMs);
    await faults.check('hypervisor', 'compute backend', method, subject);
  };

  const refused = (reason: string) => new PermanentBackendError('compute backend', reason);

  /**
   * The servers asked for in one turn (the attempts one claim started, whose simulated latency
   * ends together) made by one INSERT: one statement and one commit rather than one each. Each
   * caller gets its row, or undefined when its server existed already.
   */
  const createTogether = batchedCall(async (specs: ServerSpec[]): Promise<Array<ServerRow | undefined>> => {
    const column = <T>(of: (spec: ServerSpec) => T) => specs.map(of);
    const { rows } = await runPrepared<ServerRow>(pool, CREATE_SERVERS, [
      column((spec) => spec.serverId),
      column((spec) => spec.name),
      column((spec) => spec.regionId),
      column((spec) => spec.storagePoolId),
      column((spec) => spec.networkProfileId),
      column((spec) => spec.consoleType),
      column((spec) => spec.imageId),
      column((spec) => spec.vcpus),
      column((spec) => spec.memoryMb),
      column((spec) => spec.diskGb),
      column((spec) => JSON.stringify(spec.sshKeys)),
      column((spec) => JSON.stringify(spec.firewall)),
      column((spec) => spec.publicNetwork),
    ]);
    const made = new Map(rows.map((row) => [row.server_id, row]));
    return specs.map((spec) => made.get(spec.serverId));
  });

  async function serverRow(db: Queryable, serverId: string): Promise<ServerRow | undefined> {
    const { rows } = await runPrepared<ServerRow>(db, SERVER_BY_ID, [serverId]);
    return rows[0];
  }

  /** The public IPs attached to a server, oldest first. */
  async function addressesOf(db: Queryable, server: ServerRow): Promise<Array<{ address: string }>> {
    const { rows } = await db.query<{ address: string }>(
      'SELECT address FROM sim_addresses WHERE server_id = $1 ORDER BY created_at, address',
      [server.server_id],
    );
    return rows;
  }

  /**
   * What the hypervisor sees of a server read at `observedAt`. The time is taken before the
   * read, so that a report never claims to be newer than the state it shows.
   */
  function report(server: ServerRow, observedAt: Date, rows: Array<{ address: string }>): ServerReport {
    return {
      serverId: server.server_id,
      status: server.power,
      addresses: {
        private_ipv4: [server.private_ipv4],
        public_ipv4: [...(server.public_ipv4 ? [server.public_ipv4] : []), ...rows.map((row) => row.address)],
        ipv6: server.ipv6 ? [server.ipv6] : [],
      },
      observedAt,
    };
  }

  /** The server as it is now, reported; undefined if it does not exist. */
  async function describe(serverId: string): Promise<ServerReport | undefined> {
    const observedAt = new Date();
    const server = await serverRow(pool, serverId);
    return server ? report(server, observedAt, await addressesOf(pool, server)) : undefined;
  }

  /** Changes an existing server and reports it; a server that does not exist is refused. */
  async function change(server: ServerRef, setSql: string, params: unknown[] = [], allowedFrom?: PowerStatus[]): Promise<ServerReport> {
    const existing = await serverRow(pool, server.serverId);
    if (!existing) throw refused(`no server ${server.serverId}`);
    if (allowedFrom && !allowedFrom.includes(existing.power)) throw refused(`server ${server.serverId} is ${existing.power}`);
    await pool.query(`UPDATE sim_servers SET ${setSql}, updated_at = now() WHERE server_id = $1`, [server.serverId, ...params]);
    return (await describe(server.serverId))!;
  }

  return {
    async createServer(spec) {
      await call('createServer', spec.name);
      const observedAt = new Date();
      // A repeated create (after a crashed attempt) finds the server the first one made. The host
      // number and the addresses made of it (as \`ipv4\` below makes them) come with the INSERT.
      const created = await createTogether(spec);
      // A server made just now has no addresses attached yet: it is reported as inserted.
      if (created) return report(created, observedAt, []);
      return (await describe(spec.serverId))!;
    },

    async startServer(server) {
      await call('startServer', server.name);
      return change(server, `power = 'running', boots = boots + CASE WHEN power = 'running' THEN 0 ELSE 1 END`);
    },

    async stopServer(server) {
      await call('stopServer', server.name);
      return change(server, `power = 'stopped'`);
    },

    async rebootServer(server) {
      await call('rebootServer', server.name);
      return change(server, `power = 'running', boots = boots + 1`, [], ['running', 'crashed']);
    },

    async resizeServer(server, size) {
      await call('resizeServer', server.name);
      const existing = await serverRow(pool, server.serverId);
      if (existing && size.diskGb < existing.disk_gb) throw refused('a disk cannot shrink');
      return change(server, `vcpus = $2, memory_mb = $3, disk_gb = $4, boots = boots + CASE WHEN power = 'running' THEN 1 ELSE 0 END`, [
        size.vcpus,
        size.memoryMb,
        size.diskGb,
      ]);
    },

    async rebuildServer(server, image) {
      await call('rebuildServer', server.name);
      return change(server, `image_id = $2, ssh_keys = $3, power = 'running', boots = boots + 1`, [
        image.imageId,
        JSON.stringify(image.sshKeys),
      ]);
    },

    async rescueServer(server) {
      await call('rescueServer', server.name);
      return change(server, `power = 'rescue', boots = boots + CASE WHEN power = 'rescue' THEN 0 ELSE 1 END`);
    },

    async unrescueServer(server) {
      await call('unrescueServer', server.name);
      return change(server, `power = 'running', boots = boots + CASE WHEN power = 'running' THEN 0 ELSE 1 END`);
    },

    async deleteServer(server) {
      await call('deleteServer', server.name);
      await pool.query('UPDATE sim_addresses SET server_id = NULL WHERE server_id = $1', [server.serverId]);
      await pool.query('DELETE FROM sim_console_sessions WHERE server_id = $1', [server.serverId]);
      await pool.query('DELETE FROM sim_servers WHERE server_id = $1', [server.serverId]);
    },

    async setFirewall(server, rules) {
      await call('setFirewall', server.name);
      await change(server, 'firewall = $2', [JSON.stringify(rules)]);
    },

    async prepareConsole(server, sessionId) {
      await call('prepareConsole', server.name);
      const existing = await serverRow(pool, server.serverId);
      if (!existing) throw refused(`no server ${server.serverId}`);
      if (existing.power !== 'running' && existing.power !== 'rescue') throw refused(`server ${server.serverId} is ${existing.power}`);
      // Only a serial console is simulated (a graphical one would need a framebuffer to draw).
      if (existing.console_type !== 'serial')
        throw refused(`server ${server.serverId} has a ${existing.console_type} console; only serial is simulated`);
      await pool.query(
        `INSERT INTO sim_console_sessions (session_id, server_id, console_type) VALUES ($1, $2, $3) ON CONFLICT (session_id) DO NOTHING`,
        [sessionId, server.serverId, existing.console_type],
      );
      return { consoleType: existing.console_type };
    },

    async attachConsole(server, sessionId, sink) {
      await call('attachConsole', server.name);
      const { rowCount } = await pool.query('SELECT 1 FROM sim_console_sessions WHERE session_id = $1 AND server_id = $2', [
        sessionId,
        server.serverId,
      ]);
      const existing = await serverRow(pool, server.serverId);
      if (!existing || rowCount === 0) throw refused(`no console session ${sessionId} on server ${server.serverId}`);
      return attachSerialConsole(pool, existing, sink);
    },

    async describeServers(serverIds) {
      if (serverIds.length === 0) return [];
      await call('describeServers', 'servers');
      const observedAt = new Date();
      const { rows } = await pool.query<ServerRow>('SELECT * FROM sim_servers WHERE server_id = ANY($1::uuid[])', [serverIds]);
      // The addresses of every server asked about in one query, not one per server (the
      // reconciler describes every instance, 200 at a time).
      const { rows: attached } = await pool.query<{ server_id: string; address: string }>(
        'SELECT server_id, address FROM sim_addresses WHERE server_id = ANY($1::uuid[]) ORDER BY created_at, address',
        [rows.map((row) => row.server_id)],
      );
      const addressesByServer = new Map<string, Array<{ address: string }>>();
      for (const row of attached) {
        const addresses = addressesByServer.get(row.server_id);
        if (addresses) addresses.push(row);
        else addressesByServer.set(row.server_id, [row]);
      }
      return rows.map((row) => report(row, observedAt, addressesByServer.get(row.server_id) ?? []));
    },

    async allocateAddress({ addressId, regionId }) {
      await call('allocateAddress', addressId);
      const { rows: hosts } = await pool.query<{ n: string }>(`SELECT nextval('sim_address_host_seq')::text AS n`);
      await pool.query(
        `INSERT INTO sim_addresses (address_id, region_id, address) VALUES ($1, $2, $3) ON CONFLICT (address_id) DO NOTHING`,
        [addressId, regionId, ipv4((198 << 24) | (19 << 16), Number(hosts[0]!.n))],
      );
      const { rows } = await pool.query<{ address: string }>('SELECT address FROM sim_addresses WHERE address_id = $1', [addressId]);
      return { address: rows[0]!.address };
    },

    async attachAddress({ addressId }, server) {
      await call('attachAddress', server.name);
      const existing = await serverRow(pool, server.serverId);
      if (!existing) throw refused(`no server ${server.serverId}`);
      const { rowCount } = await pool.query(
        'UPDATE sim_addresses SET server_id = $2 WHERE address_id = $1 AND (server_id IS NULL OR server_id = $2)',
        [addressId, server.serverId],
      );
      if (rowCount === 0) throw refused(`address ${addressId} is unknown or routed elsewhere`);
      return (await describe(server.serverId))!;
    },

    async detachAddress({ addressId }, server) {
      await call('detachAddress', server.name);
      await pool.query('UPDATE sim_addresses SET server_id = NULL WHERE address_id = $1 AND server_id = $2', [addressId, server.serverId]);
      return describe(server.serverId);
    },

    async releaseAddress({ addressId }) {
      await call('releaseAddress', addressId);
      await pool.query('DELETE FROM sim_addresses WHERE address_id = $1', [addressId]);
    },
  };
}

/**
 * A serial console attached to a simulated server. The server's power and boot count are watched
 * (other calls, from any process, change them in sim_servers), so that a reboot, stop or rescue
 * shows on the console as it happens; `reboot` and `poweroff` typed as root change the server.
 */
function attachSerialConsole(pool: Pool, server: ServerRow & { boots: number }, sink: ConsoleSink): ConsoleAttachment {
  let power = server.power;
  let boots = server.boots;
  let detached = false;
  const guest = createSerialConsole(
    {
      name: server.name,
      imageId: server.image_id,
      vcpus: server.vcpus,
      memoryMb: server.memory_mb,
      diskGb: server.disk_gb,
      addresses: { private_ipv4: server.private_ipv4, public_ipv4: server.public_ipv4, ipv6: server.ipv6 },
    },
    power,
    (text) => {
      if (!detached) sink.output(text);
    },
    (request) => {
      const change =
        request === 'reboot'
          ? `UPDATE sim_servers SET boots = boots + 1, updated_at = now() WHERE server_id = $1`
          : `UPDATE sim_servers SET power = 'stopped', updated_at = now() WHERE server_id = $1`;
      pool.query(change, [server.server_id]).then(watch, () => {});
    },
  );
  let watching = false;
  async function watch(): Promise<void> {
    if (detached || watching) return;
    watching = true;
    try {
      const { rows } = await pool.query<{ power: PowerStatus; boots: number }>(
        'SELECT power, boots FROM sim_servers WHERE server_id = $1',
        [server.server_id],
      );
      if (detached) return;
      const now = rows[0];
      if (!now) {
        stop();
        sink.ended('server_deleted');
        return;
      }
      if (now.power !== power || now.boots !== boots) {
        const rebooted = now.boots !== boots;
        power = now.power;
        boots = now.boots;
        guest.powerChanged(now.power, rebooted);
      }
    } catch {
      // A missed look is taken again at the next tick.
    } finally {
      watching = false;
    }
  }
  const timer = setInterval(() => void watch(), CONSOLE_WATCH_MS);
  const stop = () => {
    detached = true;
    clearInterval(timer);
    guest.close();
  };
  guest.attach();
  return {
    input: (data) => {
      if (!detached) guest.input(data);
    },
    detach: stop,
  };
}

/** How often an attached console looks at its server's power. */
const CONSOLE_WATCH_MS = 250;

/** The address `host` places after `base` (hosts ending in .0 or .255 are skipped). */
/** Hosts per /24 block (.1 to .254). */
const PER_BLOCK = 254;

const SERVER_COLUMNS = columnsOf<ServerRow>({
  server_id: true,
  name: true,
  region_id: true,
  image_id: true,
  vcpus: true,
  memory_mb: true,
  boots: true,
  console_type: true,
  power: true,
  private_ipv4: true,
  public_ipv4: true,
  ipv6: true,
  disk_gb: true,
});
const SERVER_BY_ID = prepared('sim_server_by_id', `SELECT ${SERVER_COLUMNS} FROM sim_servers WHERE server_id = $1`);
/**
 * New servers, one per element of the arrays, each with a host number of its own: the subquery
 * names the row, so it runs (and nextval with it) once per row rather than once per statement.
 */
const CREATE_SERVERS = prepared(
  'sim_servers_create',
  `INSERT INTO sim_servers (server_id, name, region_id, storage_pool_id, network_profile_id, console_type, image_id,
       vcpus, memory_mb, disk_gb, power, ssh_keys, firewall, private_ipv4, public_ipv4, ipv6)
     SELECT s.server_id, s.name, s.region_id, s.storage_pool_id, s.network_profile_id, s.console_type, s.image_id,
            s.vcpus, s.memory_mb, s.disk_gb, 'running', s.ssh_keys, s.firewall,
            host('10.0.0.0'::inet + host.offset),
            CASE WHEN s.public_network THEN host('198.18.0.0'::inet + host.offset) END,
            CASE WHEN s.public_network THEN format('2001:db8:%s:%s::1', to_hex(host.n >> 16), to_hex(host.n & 65535)) END
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::integer[], $9::integer[],
                 $10::integer[], $11::jsonb[], $12::jsonb[], $13::boolean[])
            AS s (server_id, name, region_id, storage_pool_id, network_profile_id, console_type, image_id, vcpus, memory_mb,
                  disk_gb, ssh_keys, firewall, public_network)
     CROSS JOIN LATERAL (SELECT n, ((n - 1) / ${PER_BLOCK}) * 256 + ((n - 1) % ${PER_BLOCK}) + 1 AS offset
           FROM (SELECT nextval('sim_server_host_seq') AS n WHERE s.server_id IS NOT NULL OFFSET 0) AS next) AS host
     ON CONFLICT (server_id) DO NOTHING
     RETURNING ${SERVER_COLUMNS}`,
);

function ipv4(base: number, host: number): string {
  const perBlock = PER_BLOCK;
  const value = (base + Math.floor((host - 1) / perBlock) * 256 + ((host - 1) % perBlock) + 1) >>> 0;
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}
