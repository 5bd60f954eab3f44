// The small shell of a simulated guest (serial-console.ts is its terminal): each command a short
// function of the session, answering as the real command would on a cloud image.

/** What the simulated guest knows about the machine it runs on. */
export interface GuestMachine {
  name: string;
  imageId: string;
  vcpus: number;
  memoryMb: number;
  diskGb: number;
  addresses: { private_ipv4: string; public_ipv4: string | null; ipv6: string | null };
}

/** What a command sees of the console session it runs in. */
export interface GuestSession {
  readonly machine: GuestMachine;
  readonly os: { pretty: string; id: string; kernel: string };
  /** Who is logged in (`sudo` runs a command as root). */
  user: string;
  readonly rescue: boolean;
  readonly bootedAt: number;
  /** Whether the shell still takes commands (not logged out, not going down). */
  readonly atShell: boolean;
  hostname(): string;
  write(text: string): void;
  /** Runs a command line in this session (for `sudo`). */
  run(commandLine: string): void;
}

/** What a command leaves the session to do beyond its answer. */
export type CommandOutcome = 'prompt' | 'logout' | 'reboot' | 'poweroff' | 'done';

type Command = (session: GuestSession, args: string[], out: (text: string) => void) => CommandOutcome | void;

const memoryTable = (memoryMb: number): string => {
  const column = (value: number) => String(Math.round(value)).padStart(11);
  return [
    '               total        used        free      shared  buff/cache   available',
    `Mem:     ${column(memoryMb)} ${column(memoryMb * 0.12)} ${column(memoryMb * 0.8)}           1 ${column(memoryMb * 0.08)} ${column(memoryMb * 0.86)}`,
    'Swap:              0           0           0',
  ].join('\n');
};

/** A privileged command run by someone else than root: refused as systemd refuses it. */
const asRoot =
  (outcome: 'reboot' | 'poweroff', refusal: string): Command =>
  (session, _args, out) => {
    if (session.user === 'root') return outcome;
    out(refusal);
  };

const COMMANDS: Record<string, Command> = {
  '': () => {},
  hostname: (session, args, out) => out(args[0] === '-I' ? addressesOf(session.machine).join(' ') : session.hostname()),
  whoami: (session, _args, out) => out(session.user),
  id: (session, _args, out) =>
    out(
      session.user === 'root'
        ? 'uid=0(root) gid=0(root) groups=0(root)'
        : `uid=1000(${session.user}) gid=1000(${session.user}) groups=1000(${session.user}),27(sudo)`,
    ),
  uname: (session, args, out) =>
    out(
      args.includes('-a')
        ? `Linux ${session.hostname()} ${session.os.kernel} #1 SMP PREEMPT_DYNAMIC x86_64 GNU/Linux`
        : args.includes('-r')
          ? session.os.kernel
          : 'Linux',
    ),
  uptime: (session, _args, out) => {
    const minutes = Math.max(0, Math.floor((Date.now() - session.bootedAt) / 60_000));
    out(` ${new Date().toISOString().slice(11, 19)} up ${minutes} min,  1 user,  load average: 0.00, 0.01, 0.00`);
  },
  date: (_session, _args, out) => out(new Date().toUTCString().replace('GMT', 'UTC')),
  pwd: (session, _args, out) => out(session.user === 'root' ? '/root' : `/home/${session.user}`),
  ls: (session, _args, out) => {
    if (session.rescue) out('mnt');
  },
  cd: () => {},
  echo: (_session, args, out) => out(args.join(' ')),
  nproc: (session, _args, out) => out(String(session.machine.vcpus)),
  free: (session, _args, out) => out(memoryTable(session.machine.memoryMb)),
  df: (session, _args, out) =>
    out(
      `Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda1       ${session.machine.diskGb}G  1.9G  ${session.machine.diskGb - 2}G   5% /`,
    ),
  ip: (session, _args, out) => out(interfacesOf(session.machine)),
  ifconfig: (session, _args, out) => out(interfacesOf(session.machine)),
  cat: (session, args, out) => {
    if (args[0] === '/etc/os-release') out(`PRETTY_NAME="${session.rescue ? 'Rescue system' : session.os.pretty}"\nID=${session.os.id}`);
    else if (args[0] === '/etc/hostname') out(session.hostname());
    else out(`cat: ${args[0] ?? ''}: No such file or directory`);
  },
  clear: (session) => session.write('\x1b[H\x1b[2J'),
  help: (_session, _args, out) =>
    out('Commands: hostname, whoami, id, uname, uptime, date, pwd, ls, echo, nproc, free, df, ip, cat, clear, exit, reboot, poweroff'),
  exit: () => 'logout',
  logout: () => 'logout',
  reboot: asRoot('reboot', 'Call Reboot failed: Access denied (try: sudo reboot)'),
  poweroff: asRoot('poweroff', 'Call PowerOff failed: Access denied'),
  halt: asRoot('poweroff', 'Call PowerOff failed: Access denied'),
  sudo: (session, args, out) => {
    if (!args[0]) return out('usage: sudo command');
    const previous = session.user;
    session.user = 'root';
    session.run(args.join(' '));
    // Still at the shell (not rebooting, not logged out): back to who typed it.
    if (session.atShell) session.user = previous;
    return 'done';
  },
};

/**
 * Runs one command of the shell: its answer is written to the session; the outcome says what
 * the terminal does next (a prompt, a logout, a reboot or poweroff asked of the hypervisor, or
 * nothing more when the command ran another one that already did).
 */
export function runGuestCommand(session: GuestSession, command: string, args: string[]): CommandOutcome {
  const out = (text: string) => session.write(`${text.replace(/\n/g, '\r\n')}\r\n`);
  const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command]! : undefined;
  if (!handler) {
    out(`-bash: ${command}: command not found`);
    return 'prompt';
  }
  return handler(session, args, out) ?? 'prompt';
}

export function osName(imageId: string): { pretty: string; id: string; kernel: string } {
  if (imageId.startsWith('ubuntu-24.04')) return { pretty: 'Ubuntu 24.04.1 LTS', id: 'ubuntu', kernel: '6.8.0-45-generic' };
  if (imageId.startsWith('ubuntu-22.04')) return { pretty: 'Ubuntu 22.04.5 LTS', id: 'ubuntu', kernel: '5.15.0-122-generic' };
  if (imageId.startsWith('debian-12')) return { pretty: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', kernel: '6.1.0-26-cloud-amd64' };
  if (imageId.startsWith('rocky-9')) return { pretty: 'Rocky Linux 9.4 (Blue Onyx)', id: 'rocky', kernel: '5.14.0-427.13.1.el9_4.x86_64' };
  return { pretty: `Linux (${imageId})`, id: 'linux', kernel: '6.8.0-45-generic' };
}

function addressesOf(machine: GuestMachine): string[] {
  return [machine.addresses.private_ipv4, machine.addresses.public_ipv4, machine.addresses.ipv6].filter((value) => value !== null);
}

function interfacesOf(machine: GuestMachine): string {
  const lines = [
    '1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN',
    '    inet 127.0.0.1/8 scope host lo',
    '2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP',
    `    inet ${machine.addresses.private_ipv4}/8 scope global ens3`,
  ];
  if (machine.addresses.public_ipv4) lines.push(`    inet ${machine.addresses.public_ipv4}/32 scope global ens3`);
  if (machine.addresses.ipv6) lines.push(`    inet6 ${machine.addresses.ipv6}/64 scope global`);
  return lines.join('\n');
}
