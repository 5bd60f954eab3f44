import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { ServerFiles } from './layout.ts';
import type { Forward } from './records.ts';

/** What one QEMU process runs: its machine, its disks and its network. */
export interface LaunchSpec {
  files: ServerFiles;
  name: string;
  vcpus: number;
  memoryMb: number;
  accelerator: 'kvm' | 'tcg';
  /** Direct kernel boot (the test image, and the rescue system); absent: the disk boots itself. */
  kernel: { kernel: string; initrd: string; append: string } | undefined;
  forwards: Forward[];
}

/**
 * QEMU's command line for a server. A q35 machine (the probe found `microvm` hanging on TSC
 * calibration under TCG); virtio disk, network and entropy; the serial port and the QMP monitor
 * on unix sockets in the server's folder; `-daemonize` so that the guest outlives the server
 * process that started it; `-no-shutdown` so that a guest that powers itself off leaves QEMU
 * waiting in state `shutdown` (the driver then knows it stopped rather than crashed, and ends
 * it). User-mode networking with `restrict=on`: the guest reaches nothing outside, and only the
 * forwarded ports reach it; no bridge, no tap, nothing changed on the host.
 */
export function qemuArguments(spec: LaunchSpec): string[] {
  // A comma inside an option's value is written twice (QEMU's option syntax).
  const escape = (value: string) => value.replaceAll(',', ',,');
  const files = spec.files;
  const forwards = spec.forwards.map(
    (forward) => `,hostfwd=${forward.protocol}:${forward.address}:${forward.hostPort}-:${forward.guestPort}`,
  );
  return [
    // The process shows in `ps` with the server's name; `guest=` names the machine for QMP.
    '-name',
    `guest=${spec.name},process=qemu-${spec.name}`,
    '-machine',
    'q35',
    '-accel',
    spec.accelerator,
    '-cpu',
    spec.accelerator === 'kvm' ? 'host' : 'max',
    '-smp',
    String(spec.vcpus),
    '-m',
    String(spec.memoryMb),
    '-nodefaults',
    '-no-user-config',
    '-no-shutdown',
    '-display',
    'none',
    '-vga',
    'none',
    '-chardev',
    `socket,id=serial0,path=${escape(files.serialSocket)},server=on,wait=off,logfile=${escape(files.serialLog)}`,
    '-serial',
    'chardev:serial0',
    '-chardev',
    `socket,id=qmp,path=${escape(files.qmpSocket)},server=on,wait=off`,
    '-mon',
    'chardev=qmp,mode=control',
    '-pidfile',
    files.pidFile,
    '-daemonize',
    '-drive',
    `file=${escape(files.disk)},if=virtio,format=qcow2,id=disk0,discard=unmap`,
    '-drive',
    `file=${escape(files.seed)},if=virtio,format=raw,readonly=on,id=seed`,
    '-netdev',
    `user,id=net0,restrict=on${forwards.join('')}`,
    '-device',
    'virtio-net-pci,netdev=net0',
    '-device',
    'virtio-rng-pci',
    ...(spec.kernel ? ['-kernel', spec.kernel.kernel, '-initrd', spec.kernel.initrd, '-append', spec.kernel.append] : []),
  ];
}

/**
 * Starts QEMU and waits for it to daemonize: its first process exits once the machine is set up
 * (ports bound, disks opened), 0 if it is running. Its error output is returned for the driver to
 * tell why it did not start.
 */
export function launchQemu(binary: string, args: string[]): Promise<{ started: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(binary, args, { timeout: 60_000, maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ started: !error, output: `${stderr}${stdout}`.trim() || (error ? error.message : '') });
    });
  });
}

/**
 * The pid of the server's QEMU while it runs, read from its pid file and checked: a pid is reused
 * once its process is gone, so the process must be a QEMU of this server (its command line names
 * this server's monitor socket). A zombie has an empty command line and counts as gone.
 */
export async function runningPid(files: ServerFiles): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number((await readFile(files.pidFile, 'utf8')).trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  try {
    const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return commandLine.includes(files.qmpSocket) ? pid : undefined;
  } catch (error) {
    // Without /proc (not Linux), the signal check above is all there is.
    return (error as NodeJS.ErrnoException).code === 'ENOENT' && !(await procMounted()) ? pid : undefined;
  }
}

async function procMounted(): Promise<boolean> {
  try {
    await readFile('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
}

/** Waits until the server's QEMU is gone; false if it still runs after `timeoutMs`. */
export async function waitForExit(files: ServerFiles, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await runningPid(files)) === undefined) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Resident memory of a process in bytes (for the bench), or undefined where /proc cannot tell. */
export async function residentBytes(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
