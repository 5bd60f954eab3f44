import { execFile } from 'node:child_process';
import { access, mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, type QemuConfig } from '../../config.ts';
import type { Logger } from '../../logging.ts';
import { PermanentBackendError, TransientBackendError } from '../errors.ts';
import type { HypervisorDriver, PowerStatus, ServerRef, ServerReport, ServerSpec } from '../hypervisor.ts';
import { chooseAccelerator, type Accelerator } from './accelerator.ts';
import { createImageSources, diskTool } from './images.ts';
import { qemuLayout, type ServerFiles } from './layout.ts';
import { createAddressPool, openPorts, planForwards, primaryAddressId, type AddressEntry } from './network.ts';
import { launchQemu, qemuArguments, runningPid, waitForExit } from './processes.ts';
import { hmpCommand, qmpCommand } from './qmp.ts';
import { readRecord, writeJsonAtomically, type Forward, type ServerRecord } from './records.ts';
import { writeSeed } from './seed.ts';
import { SerialPort } from './serial.ts';

const run = promisify(execFile);

/** The guest's address on QEMU's user-mode network (each server has a network of its own). */
const GUEST_ADDRESS = '10.0.2.15';
/** A server's folder is named by its id (a deleted one's is set aside as `<id>.deleting`). */
const SERVER_FOLDER = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** QEMU run states in which the guest no longer runs through no request of the platform. */
const FAILED_RUN_STATES = ['guest-panicked', 'internal-error', 'io-error'];

export interface QemuDriverOptions {
  dataDir: string;
  config: QemuConfig;
  log: Logger;
}

/**
 * The QEMU driver: real guests on this host, one QEMU process per server, controlled over QMP.
 * Everything it knows sits in files under DATA_DIR/qemu (layout.ts), and every state it reports
 * is read from QEMU when asked: the process (its pid file, checked against /proc) and its run
 * state (QMP `query-status`). QEMU runs daemonized, so guests outlive the server process: a new
 * one (after a restart or a crash) finds them by their pid files and sockets, with nothing to
 * hand over. Calls are idempotent by server id and address id, as the interface asks, and calls
 * for one server are carried out one at a time within this process.
 */
export async function createQemuHypervisor({ dataDir, config, log }: QemuDriverOptions): Promise<HypervisorDriver> {
  const layout = qemuLayout(dataDir);
  await checkTools(config);
  await mkdir(layout.serversDir, { recursive: true });
  if (layout.socketsDir) await mkdir(layout.socketsDir, { recursive: true, mode: 0o700 });
  await mkdir(layout.addressesDir, { recursive: true });

  const images = createImageSources(layout, config.testImageDir);
  const disks = diskTool(config.imgBinary);
  const addresses = createAddressPool(layout, config.addressPool);
  await addresses.sweep();
  const chosen = await chooseAccelerator(config.accel);
  let accelerator: Accelerator = chosen.accelerator;
  log.info(
    { accelerator, reason: chosen.reason },
    `QEMU driver: guests run under ${accelerator === 'kvm' ? 'KVM' : 'TCG (emulation, no KVM)'}`,
  );
  if (!(await images.testImage())) {
    log.warn(
      { dir: config.testImageDir },
      'QEMU driver: the test image is not built (scripts/qemu/build-test-image.sh); no rescue system, and the tiny image cannot be created',
    );
  }
  await finishDeletions();
  await reportReattached();

  const refused = (reason: string) => new PermanentBackendError('compute backend', reason);
  const transient = (reason: string) => new TransientBackendError('compute backend', reason);

  /** Calls for one server, one after another (in this process; the engine runs one operation per instance). */
  const queues = new Map<string, Promise<unknown>>();
  function serialized<T>(serverId: string, work: () => Promise<T>): Promise<T> {
    const previous = queues.get(serverId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const settled = next.catch(() => {});
    queues.set(serverId, settled);
    void settled.then(() => {
      if (queues.get(serverId) === settled) queues.delete(serverId);
    });
    return next;
  }

  const serialPorts = new Map<string, SerialPort>();

  async function finishDeletions(): Promise<void> {
    // A deletion interrupted after its folder was set aside: its QEMU is already gone.
    for (const name of await readdir(layout.serversDir)) {
      if (name.endsWith('.deleting')) await rm(path.join(layout.serversDir, name), { recursive: true, force: true });
    }
  }

  async function reportReattached(): Promise<void> {
    const running: Array<{ serverId: string; pid: number }> = [];
    for (const name of await readdir(layout.serversDir)) {
      if (!SERVER_FOLDER.test(name)) continue;
      const pid = await runningPid(layout.server(name));
      if (pid !== undefined) running.push({ serverId: name, pid });
    }
    if (running.length > 0)
      log.info({ servers: running }, `QEMU driver: found ${running.length} running guest(s) of an earlier server process`);
  }

  async function load(server: ServerRef): Promise<{ files: ServerFiles; record: ServerRecord }> {
    const files = layout.server(server.serverId);
    const record = await readRecord(files.record);
    if (!record) throw refused(`no server ${server.serverId}`);
    return { files, record };
  }

  const save = (files: ServerFiles, record: ServerRecord) => writeJsonAtomically(files.record, record);

  /** QEMU's run state, or undefined when no QEMU of this server runs. */
  async function runState(files: ServerFiles): Promise<string | undefined> {
    if ((await runningPid(files)) === undefined) return undefined;
    try {
      return (await qmpCommand<{ status: string }>(files.qmpSocket, 'query-status')).status;
    } catch {
      // Alive, but its monitor did not answer (busy with another client, or going away).
      return (await runningPid(files)) === undefined ? undefined : 'unknown';
    }
  }

  /** The power status, as QEMU shows it now. */
  async function statusOf(files: ServerFiles, record: ServerRecord): Promise<PowerStatus> {
    const state = await runState(files);
    if (state === undefined) return record.power === 'on' ? 'crashed' : 'stopped';
    if (state === 'shutdown') {
      // The guest powered itself off; QEMU waits (-no-shutdown) and is ended now.
      void serialized(record.serverId, () => reapPoweredOff(files)).catch((error: unknown) =>
        log.warn(
          { err: error, server_id: record.serverId },
          'QEMU driver: ending a powered-off guest failed; tried again at the next look',
        ),
      );
      return 'stopped';
    }
    if (FAILED_RUN_STATES.includes(state)) return 'crashed';
    return record.mode === 'rescue' ? 'rescue' : 'running';
  }

  /** Ends a QEMU whose guest powered itself off, and records the server as off (not crashed). */
  async function reapPoweredOff(files: ServerFiles): Promise<void> {
    if ((await runState(files)) !== 'shutdown') return;
    await endQemu(files);
    const record = await readRecord(files.record);
    if (record && record.power === 'on') await save(files, { ...record, power: 'off', forwards: [] });
    log.info({ server_id: record?.serverId }, 'QEMU driver: a guest powered itself off');
  }

  /**
   * What the server is, as of `observedAt`: a time taken before `record` (and `pool`) were read.
   * A report built on a record read before an operation changed it must be older than that
   * operation's own report, or it would replace it: the reconciler read a running server's record,
   * a stop ended its QEMU and saved it off and reported it stopped, and the reconciler, going on
   * from the record it had, reported a QEMU gone while the record said on (`crashed`) with a later
   * time, which won.
   */
  async function report(files: ServerFiles, record: ServerRecord, pool?: AddressEntry[], observedAt = new Date()): Promise<ServerReport> {
    const status = await statusOf(files, record);
    const entries = pool ?? (await addresses.entries());
    return {
      serverId: record.serverId,
      status,
      addresses: {
        private_ipv4: [GUEST_ADDRESS],
        public_ipv4: entries.filter((entry) => entry.serverId === record.serverId).map((entry) => entry.address),
        ipv6: [],
      },
      observedAt,
    };
  }

  /** Quits QEMU (its disk image is closed cleanly), or kills it if it does not go. */
  async function endQemu(files: ServerFiles): Promise<void> {
    const pid = await runningPid(files);
    if (pid === undefined) return;
    await qmpCommand(files.qmpSocket, 'quit', undefined, 2_000).catch(() => {});
    if (await waitForExit(files, 5_000)) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
    if (!(await waitForExit(files, 5_000))) throw transient(`the QEMU of ${files.dir} does not end`);
  }

  /** An ACPI power-button press, then (after QEMU_STOP_TIMEOUT_MS without the guest powering off) a hard stop. */
  async function powerOff(files: ServerFiles, graceful: boolean): Promise<void> {
    if ((await runningPid(files)) === undefined) return;
    if (graceful) {
      const deadline = Date.now() + config.stopTimeoutMs;
      await qmpCommand(files.qmpSocket, 'system_powerdown').catch(() => {});
      for (;;) {
        const state = await runState(files);
        if (state === undefined || state === 'shutdown' || Date.now() >= deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await endQemu(files);
  }

  /** Starts the server's QEMU as its record says (mode, size, image), unless it runs already. */
  async function launch(files: ServerFiles, record: ServerRecord): Promise<ServerRecord> {
    const state = await runState(files);
    if (state !== undefined && state !== 'shutdown' && !FAILED_RUN_STATES.includes(state)) return record;
    if (state !== undefined) await endQemu(files);
    const kernel = await bootKernel(record);
    const routed = (await addresses.entries()).filter((entry) => entry.serverId === record.serverId).map((entry) => entry.address);
    const { forwards, moved } = await planForwards(routed, openPorts(record.firewall), []);
    for (const forward of moved) {
      log.warn(
        { server_id: record.serverId, ...forward },
        `QEMU driver: port ${forward.guestPort} of ${forward.address} cannot be bound on this host; forwarded from port ${forward.hostPort} instead`,
      );
    }
    const spec = { files, name: record.name, vcpus: record.vcpus, memoryMb: record.memoryMb, kernel, forwards };
    let result = await launchQemu(config.binary, qemuArguments({ ...spec, accelerator }));
    // KVM can fail at the start (QEMU says so) or just after it (a CPU without hardware
    // virtualisation aborts on its first MSR): either way TCG takes over, for good.
    let kvmFailed = accelerator === 'kvm' && !result.started && /kvm/i.test(result.output);
    if (accelerator === 'kvm' && result.started) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      kvmFailed = (await runState(files)) === undefined;
    }
    if (kvmFailed) {
      log.warn({ output: result.output }, 'QEMU driver: KVM failed; guests run under TCG from now on');
      accelerator = 'tcg';
      result = await launchQemu(config.binary, qemuArguments({ ...spec, accelerator }));
    }
    if (!result.started) {
      log.warn({ server_id: record.serverId, output: result.output }, 'QEMU driver: QEMU did not start');
      if (/host forwarding rule/i.test(result.output)) throw transient('a forwarded port was taken before QEMU bound it');
      if (/lock/i.test(result.output)) throw transient('the disk is held by another QEMU');
      throw refused('QEMU did not start the server');
    }
    const started: ServerRecord = { ...record, power: 'on', accelerator, forwards };
    await save(files, started);
    log.info(
      { server_id: record.serverId, pid: await runningPid(files), accelerator, mode: record.mode, forwards },
      `QEMU driver: started ${record.name} under ${accelerator}`,
    );
    return started;
  }

  /** The kernel a server boots directly: the rescue system's in rescue, the test image's for its images; none for a disk that boots itself. */
  async function bootKernel(record: ServerRecord): Promise<{ kernel: string; initrd: string; append: string } | undefined> {
    if (record.mode === 'rescue') {
      const rescue = await images.testImage();
      if (!rescue) throw refused('no rescue system on this host');
      return { ...rescue, append: `${rescue.append} cloudplatform.mode=rescue` };
    }
    if (record.boot === 'disk') return undefined;
    const image = await images.resolve(record.regionId, record.imageId);
    if (!image || image.boot !== 'kernel') throw refused(`image ${record.imageId} is not available on this host`);
    return image;
  }

  /** A new disk for the record's image and size (an overlay on a registered image, or a blank disk for the test image). */
  async function makeDisk(files: ServerFiles, record: ServerRecord): Promise<ServerRecord> {
    const image = await images.resolve(record.regionId, record.imageId);
    if (!image) throw refused(`image ${record.imageId} is not available in region ${record.regionId} on this host`);
    if (image.boot === 'disk' && (await disks.sizeGb(image.file)) > record.diskGb) {
      throw refused(`image ${record.imageId} is larger than a ${record.diskGb} GB disk`);
    }
    await disks.create(files.disk, record.diskGb, image.boot === 'disk' ? image.file : undefined);
    return { ...record, boot: image.boot };
  }

  /** Brings the running QEMU's forwarded ports in line with the firewall and the addresses routed to the server. */
  async function applyForwards(files: ServerFiles, record: ServerRecord): Promise<ServerRecord> {
    // Not running: the next start forwards what the record says.
    if ((await runState(files)) === undefined) {
      await save(files, record);
      return record;
    }
    const routed = (await addresses.entries()).filter((entry) => entry.serverId === record.serverId).map((entry) => entry.address);
    const { forwards } = await planForwards(routed, openPorts(record.firewall), record.forwards);
    const key = (forward: Forward) => `${forward.protocol}:${forward.address}:${forward.hostPort}:${forward.guestPort}`;
    const wanted = new Set(forwards.map(key));
    const current = new Set(record.forwards.map(key));
    const applied: Forward[] = [];
    for (const forward of record.forwards) {
      if (wanted.has(key(forward))) applied.push(forward);
      else await hmpCommand(files.qmpSocket, `hostfwd_remove net0 ${forward.protocol}:${forward.address}:${forward.hostPort}`);
    }
    let failure: string | undefined;
    for (const forward of forwards) {
      if (current.has(key(forward))) continue;
      const output = await hmpCommand(
        files.qmpSocket,
        `hostfwd_add net0 ${forward.protocol}:${forward.address}:${forward.hostPort}-:${forward.guestPort}`,
      );
      if (output.trim()) {
        log.warn({ server_id: record.serverId, forward, output: output.trim() }, 'QEMU driver: a port could not be forwarded');
        failure = 'a forwarded port was taken before QEMU bound it';
      } else applied.push(forward);
    }
    const updated = { ...record, forwards: applied };
    await save(files, updated);
    if (failure) throw transient(failure);
    return updated;
  }

  const driver: HypervisorDriver = {
    createServer: (spec: ServerSpec) =>
      serialized(spec.serverId, async () => {
        const files = layout.server(spec.serverId);
        await mkdir(files.dir, { recursive: true });
        if (files.socketDir) await mkdir(files.socketDir, { recursive: true, mode: 0o700 });
        // A repeated create (after a crashed attempt) carries on from what the first one made.
        let record = await readRecord(files.record);
        if (!record) {
          record = {
            serverId: spec.serverId,
            name: spec.name,
            regionId: spec.regionId,
            imageId: spec.imageId,
            boot: 'kernel',
            vcpus: spec.vcpus,
            memoryMb: spec.memoryMb,
            diskGb: spec.diskGb,
            publicNetwork: spec.publicNetwork,
            sshKeys: spec.sshKeys,
            firewall: spec.firewall,
            power: 'off',
            mode: 'normal',
            accelerator: null,
            forwards: [],
          };
          if (!(await images.resolve(spec.regionId, spec.imageId))) {
            await rm(files.dir, { recursive: true, force: true });
            throw refused(`image ${spec.imageId} is not available in region ${spec.regionId} on this host`);
          }
          await save(files, record);
        }
        if (!(await fileExists(files.disk))) {
          record = await makeDisk(files, record);
          await save(files, record);
        }
        if (!(await fileExists(files.seed))) await writeSeed(files.seed, record);
        if (record.publicNetwork && !(await addresses.allocate(primaryAddressId(record.serverId), record.regionId, record.serverId))) {
          throw refused('no free address in the public address pool');
        }
        record = await launch(files, record);
        return report(files, record);
      }),

    startServer: (server) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        // A start boots the server's own system (after a stop in rescue too); a running one is left as it is.
        const running = (await runState(files)) !== undefined;
        return report(files, await launch(files, running ? record : { ...record, mode: 'normal' }));
      }),

    stopServer: (server) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        await powerOff(files, true);
        const stopped: ServerRecord = { ...record, power: 'off', mode: 'normal', forwards: [] };
        await save(files, stopped);
        return report(files, stopped);
      }),

    rebootServer: (server) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        if ((await runState(files)) === undefined && record.power === 'off') throw refused(`server ${server.serverId} is stopped`);
        await powerOff(files, true);
        return report(files, await launch(files, record));
      }),

    resizeServer: (server, size) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        if (size.diskGb < record.diskGb) throw refused('a disk cannot shrink');
        const wasPowered = record.power === 'on' || (await runState(files)) !== undefined;
        // vCPUs and memory are fixed for a QEMU's life, and the disk is grown while nothing has it open.
        await powerOff(files, true);
        if (size.diskGb > (await disks.sizeGb(files.disk))) await disks.grow(files.disk, size.diskGb);
        const resized: ServerRecord = { ...record, vcpus: size.vcpus, memoryMb: size.memoryMb, diskGb: size.diskGb };
        await save(files, resized);
        return report(files, wasPowered ? await launch(files, resized) : { ...resized, power: 'off' });
      }),

    rebuildServer: (server, image) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        if (!(await images.resolve(record.regionId, image.imageId))) {
          throw refused(`image ${image.imageId} is not available in region ${record.regionId} on this host`);
        }
        // Everything on the disk is lost: no need to wait for the guest to shut down.
        await powerOff(files, false);
        let rebuilt: ServerRecord = { ...record, imageId: image.imageId, sshKeys: image.sshKeys, mode: 'normal' };
        rebuilt = await makeDisk(files, rebuilt);
        await writeSeed(files.seed, rebuilt);
        await save(files, rebuilt);
        return report(files, await launch(files, rebuilt));
      }),

    rescueServer: (server) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        if (record.mode === 'rescue' && (await runState(files)) === 'running') return report(files, record);
        if (!(await images.testImage())) throw refused('no rescue system on this host');
        await powerOff(files, true);
        return report(files, await launch(files, { ...record, mode: 'rescue' }));
      }),

    unrescueServer: (server) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        if (record.mode === 'normal' && (await runState(files)) === 'running') return report(files, record);
        await powerOff(files, true);
        return report(files, await launch(files, { ...record, mode: 'normal' }));
      }),

    deleteServer: (server) =>
      serialized(server.serverId, async () => {
        const files = layout.server(server.serverId);
        await endQemu(files);
        serialPorts.get(server.serverId)?.end();
        serialPorts.delete(server.serverId);
        for (const entry of await addresses.entries()) {
          if (entry.addressId === primaryAddressId(server.serverId)) await addresses.release(entry);
          else if (entry.serverId === server.serverId) await addresses.route(entry, null);
        }
        // Set aside first, so that a crash half-way through the removal leaves a folder no lookup
        // finds (and the next start removes).
        const aside = `${files.dir}.deleting`;
        try {
          await rename(files.dir, aside);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
        await rm(aside, { recursive: true, force: true });
        if (files.socketDir) await rm(files.socketDir, { recursive: true, force: true });
      }),

    setFirewall: (server, rules) =>
      serialized(server.serverId, async () => {
        const { files, record } = await load(server);
        await applyForwards(files, { ...record, firewall: rules });
      }),

    async prepareConsole(server) {
      const { files, record } = await load(server);
      const status = await statusOf(files, record);
      if (status !== 'running' && status !== 'rescue') throw refused(`server ${server.serverId} is ${status}`);
      // The serial port is the console this driver offers, whatever the region's catalogue entry says.
      return { consoleType: 'serial' };
    },

    async attachConsole(server, _sessionId, sink) {
      const { files } = await load(server);
      let port = serialPorts.get(server.serverId);
      if (!port) {
        port = new SerialPort(
          files,
          () => fileExists(files.record),
          () => serialPorts.delete(server.serverId),
        );
        serialPorts.set(server.serverId, port);
      }
      return port.attach(sink);
    },

    async describeServers(serverIds) {
      // Taken before anything is read: see `report`.
      const observedAt = new Date();
      const pool = await addresses.entries();
      const reports: ServerReport[] = [];
      // A few at a time: each is a pid check and a QMP round trip.
      for (let start = 0; start < serverIds.length; start += 8) {
        const batch = await Promise.all(
          serverIds.slice(start, start + 8).map(async (serverId) => {
            const files = layout.server(serverId);
            const record = await readRecord(files.record);
            return record ? report(files, record, pool, observedAt) : undefined;
          }),
        );
        reports.push(...batch.filter((entry): entry is ServerReport => entry !== undefined));
      }
      return reports;
    },

    async allocateAddress({ addressId, regionId }) {
      const entry = await addresses.allocate(addressId, regionId, null);
      if (!entry) throw refused('no free address in the public address pool');
      return { address: entry.address };
    },

    attachAddress: ({ addressId }, server) =>
      serialized(server.serverId, async () => {
        const entry = await addresses.byId(addressId);
        if (!entry) throw refused(`no address ${addressId}`);
        if (entry.serverId && entry.serverId !== server.serverId) throw refused(`address ${addressId} is routed elsewhere`);
        const { files, record } = await load(server);
        await addresses.route(entry, server.serverId);
        return report(files, await applyForwards(files, record));
      }),

    detachAddress: ({ addressId }, server) =>
      serialized(server.serverId, async () => {
        const entry = await addresses.byId(addressId);
        if (entry?.serverId === server.serverId) await addresses.route(entry, null);
        const files = layout.server(server.serverId);
        const record = await readRecord(files.record);
        if (!record) return undefined;
        return report(files, await applyForwards(files, record));
      }),

    async releaseAddress({ addressId }) {
      const entry = await addresses.byId(addressId);
      if (!entry) return;
      const serverId = entry.serverId;
      await addresses.release(entry);
      // Normally detached first; if not, the server stops forwarding it.
      if (serverId) {
        await serialized(serverId, async () => {
          const files = layout.server(serverId);
          const record = await readRecord(files.record);
          if (record) await applyForwards(files, record);
        });
      }
    },
  };
  return withBackendErrors(driver, log);
}

/**
 * The interface's promise: a failure is a TransientBackendError or a PermanentBackendError. What
 * the host threw otherwise (a qemu-img or file-system error, a monitor that went away) is logged
 * here, with its own words, and becomes a transient failure: the operation is tried again.
 */
function withBackendErrors(driver: HypervisorDriver, log: Logger): HypervisorDriver {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(driver) as Array<[string, (...args: unknown[]) => Promise<unknown>]>) {
    wrapped[name] = (...args: unknown[]) =>
      method(...args).catch((error: unknown) => {
        if (error instanceof PermanentBackendError || error instanceof TransientBackendError) throw error;
        log.warn({ err: error, call: name }, `QEMU driver: ${name} failed`);
        throw new TransientBackendError('compute backend', `${name} failed on this host`);
      });
  }
  return wrapped as unknown as HypervisorDriver;
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/** The programs the driver runs, each from a Debian package: a missing one stops start-up with what to install. */
async function checkTools(config: QemuConfig): Promise<void> {
  const tools: Array<[string, string]> = [
    [config.binary, 'qemu-system-x86'],
    [config.imgBinary, 'qemu-utils'],
    ['genisoimage', 'genisoimage'],
  ];
  for (const [binary, debianPackage] of tools) {
    try {
      await run(binary, ['--version']);
    } catch {
      throw new ConfigError(`COMPUTE_DRIVER=qemu needs ${binary} (Debian: apt-get install ${debianPackage})`);
    }
  }
}
