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
 */
export interface QemuLayout {
  root: string;
  serversDir: string;
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
}

/** A server id is the instance's uuid: checked, since it becomes a path. */
const SERVER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function qemuLayout(dataDir: string): QemuLayout {
  const root = path.resolve(dataDir, 'qemu');
  const serversDir = path.join(root, 'servers');
  return {
    root,
    serversDir,
    addressesDir: path.join(root, 'addresses'),
    imagesDir: path.join(root, 'images'),
    server(serverId) {
      if (!SERVER_ID.test(serverId)) throw new Error(`not a server id: ${JSON.stringify(serverId)}`);
      const dir = path.join(serversDir, serverId);
      return {
        dir,
        record: path.join(dir, 'server.json'),
        disk: path.join(dir, 'disk.qcow2'),
        seed: path.join(dir, 'seed.iso'),
        pidFile: path.join(dir, 'qemu.pid'),
        qmpSocket: path.join(dir, 'qmp.sock'),
        serialSocket: path.join(dir, 'serial.sock'),
        serialLog: path.join(dir, 'serial.log'),
      };
    },
  };
}
