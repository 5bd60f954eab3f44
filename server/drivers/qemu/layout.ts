import { createHash } from 'node:crypto';
import path from 'node:path';

/**
 * Where the QEMU driver keeps what it owns, under DATA_DIR/qemu. Every path is absolute: QEMU's
 * -daemonize changes its directory to `/`, and a qcow2 overlay names its backing file by path.
 *
 *   servers/<server id>/   one folder per server: everything of it, so that deleting the folder
 *                          leaves nothing behind
 *     server.json          what the platform asked for (size, image, keys, firewall, power)
 *     disk.qcow2           the disk: an overlay on a registered image, or a blank disk
 *     seed.iso             the cloud-init NoCloud seed (`cidata`): hostname and SSH keys
 *     qemu.pid             the running QEMU's pid (QEMU writes and locks it)
 *     qmp.sock             its QMP monitor
 *     serial.sock          its serial port (the console)
 *     serial.log           what the guest wrote to its serial port since it was started
 *   addresses/<ipv4>.json  one file per address of the pool that is in use (created exclusively)
 *   images/<region>/<image id>.qcow2    images an operator registered (scripts/qemu/register-image.sh)
 *
 * A unix socket's path holds at most 107 bytes: when DATA_DIR is too long for that, a server's
 * sockets live in a folder of their own under /tmp instead, named by a hash of DATA_DIR (the same
 * after a restart, so that running guests are found again), readable by this user only.
 */
export interface QemuLayout {
  root: string;
  serversDir: string;
  /** Where servers' sockets are, when not in their own folders (DATA_DIR too long for a socket path). */
  socketsDir: string | undefined;
  addressesDir: string;
  imagesDir: string;
  server(serverId: string): ServerFiles;
}

export interface ServerFiles {
  dir: string;
  record: string;
  disk: string;
  seed: string;
  pidFile: string;
  qmpSocket: string;
  serialSocket: string;
  serialLog: string;
  /** The folder of the sockets, when it is not `dir`. */
  socketDir: string | undefined;
}

/** The longest unix socket path (sun_path is 108 bytes with its terminating zero). */
const MAX_SOCKET_PATH = 107;

/** A server id is the instance's uuid: checked, since it becomes a path. */
const SERVER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function qemuLayout(dataDir: string): QemuLayout {
  const root = path.resolve(dataDir, 'qemu');
  const serversDir = path.join(root, 'servers');
  const longest = path.join(serversDir, '00000000-0000-0000-0000-000000000000', 'serial.sock');
  const socketsDir =
    Buffer.byteLength(longest) > MAX_SOCKET_PATH
      ? `/tmp/cloud-platform-qemu-${createHash('sha256').update(root).digest('hex').slice(0, 16)}`
      : undefined;
  return {
    root,
    serversDir,
    socketsDir,
    addressesDir: path.join(root, 'addresses'),
    imagesDir: path.join(root, 'images'),
    server(serverId) {
      if (!SERVER_ID.test(serverId)) throw new Error(`not a server id: ${JSON.stringify(serverId)}`);
      const dir = path.join(serversDir, serverId);
      const socketDir = socketsDir ? path.join(socketsDir, serverId) : undefined;
      return {
        dir,
        record: path.join(dir, 'server.json'),
        disk: path.join(dir, 'disk.qcow2'),
        seed: path.join(dir, 'seed.iso'),
        pidFile: path.join(dir, 'qemu.pid'),
        qmpSocket: path.join(socketDir ?? dir, 'qmp.sock'),
        serialSocket: path.join(socketDir ?? dir, 'serial.sock'),
        serialLog: path.join(dir, 'serial.log'),
        socketDir,
      };
    },
  };
}
