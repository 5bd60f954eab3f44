import type { PowerStatus } from '../hypervisor.ts';

/** What the simulated guest knows about the machine it runs on. */
export interface GuestMachine {
  name: string;
  imageId: string;
  vcpus: number;
  memoryMb: number;
  diskGb: number;
  addresses: { private_ipv4: string; public_ipv4: string | null; ipv6: string | null };
}

/** What the guest can ask of the hypervisor from inside (`reboot`, `poweroff` typed at its shell). */
export type GuestRequest = 'reboot' | 'poweroff';

/**
 * The serial console of a simulated server (ttyS0 of a cloud image booted with console=ttyS0): a
 * boot log when it boots, a login prompt, a small shell with a handful of commands, and what a
 * reboot, a stop or a rescue boot look like from inside. It keeps no state beyond the connection:
 * output is written through `writeOut`, with short pauses between boot lines as a real boot has.
 * What one piece of input makes it write (echoes, a command's answer) is written at once, as one
 * piece; a line holds at most MAX_LINE characters, as a Linux terminal's does (the rest is dropped).
 */
export function createSerialConsole(
  machine: GuestMachine,
  power: PowerStatus,
  writeOut: (text: string) => void,
  request: (what: GuestRequest) => void,
) {
  type Mode = 'off' | 'booting' | 'login' | 'password' | 'shell';
  let mode: Mode = 'off';
  let rescue = false;
  let user = '';
  let line = '';
  let escape = '';
  let bootedAt = Date.now();
  let timers: NodeJS.Timeout[] = [];
  /** Output gathered while input is handled, written as one piece once it is. */
  let gathered: string[] | undefined;
  const write = (text: string): void => {
    if (gathered) gathered.push(text);
    else writeOut(text);
  };
  const hostname = () => (rescue ? 'rescue' : machine.name);
  const os = osName(machine.imageId);

  const prompt = () => {
    const home = user === 'root' ? '~' : '~';
    write(`${user}@${hostname()}:${home}${user === 'root' ? '#' : '$'} `);
  };
  const loginPrompt = () => write(`\r\n${rescue ? 'Rescue system' : os.pretty} ${hostname()} ttyS0\r\n\r\n${hostname()} login: `);

  /** Lines written one after another, as a boot prints them; `then` runs after the last one. */
  function play(lines: string[], then: () => void, gapMs = 15): void {
    cancelPlayback();
    lines.forEach((text, index) => timers.push(setTimeout(() => write(`${text}\r\n`), gapMs * index)));
    timers.push(setTimeout(then, gapMs * lines.length));
  }
  function cancelPlayback(): void {
    for (const timer of timers) clearTimeout(timer);
    timers = [];
  }

  function boot(intoRescue: boolean): void {
    rescue = intoRescue;
    mode = 'booting';
    line = '';
    bootedAt = Date.now();
    play(bootLog(machine, intoRescue, os), () => {
      if (rescue) {
        // The rescue system logs root in on its console.
        user = 'root';
        mode = 'shell';
        write('\r\nRescue system: your disk is /dev/vda (not mounted). Mount it with: mount /dev/vda1 /mnt\r\n\r\n');
        prompt();
      } else {
        user = '';
        mode = 'login';
        loginPrompt();
      }
    });
  }

  function shutdownLines(kind: 'reboot' | 'poweroff'): string[] {
    return [
      '',
      '         Stopping session-1.scope - Session 1 of User…',
      '[  OK  ] Stopped ssh.service - OpenBSD Secure Shell server.',
      '[  OK  ] Reached target shutdown.target - System Shutdown.',
      '[  OK  ] Finished systemd-poweroff.service - System Power Off.',
      kind === 'reboot' ? '[ 1042.118312] reboot: Restarting system' : '[ 1042.118312] reboot: Power down',
    ];
  }

  function runCommand(commandLine: string): void {
    const [command = '', ...args] = commandLine.trim().split(/\s+/);
    const out = (text: string) => write(`${text.replace(/\n/g, '\r\n')}\r\n`);
    switch (command) {
      case '':
        break;
      case 'hostname':
        out(args[0] === '-I' ? addressesOf(machine).join(' ') : hostname());
        break;
      case 'whoami':
        out(user);
        break;
      case 'id':
        out(
          user === 'root' ? 'uid=0(root) gid=0(root) groups=0(root)' : `uid=1000(${user}) gid=1000(${user}) groups=1000(${user}),27(sudo)`,
        );
        break;
      case 'uname':
        out(
          args.includes('-a')
            ? `Linux ${hostname()} ${os.kernel} #1 SMP PREEMPT_DYNAMIC x86_64 GNU/Linux`
            : args.includes('-r')
              ? os.kernel
              : 'Linux',
        );
        break;
      case 'uptime': {
        const minutes = Math.max(0, Math.floor((Date.now() - bootedAt) / 60_000));
        out(` ${new Date().toISOString().slice(11, 19)} up ${minutes} min,  1 user,  load average: 0.00, 0.01, 0.00`);
        break;
      }
      case 'date':
        out(new Date().toUTCString().replace('GMT', 'UTC'));
        break;
      case 'pwd':
        out(user === 'root' ? '/root' : `/home/${user}`);
        break;
      case 'ls':
        if (rescue) out('mnt');
        break;
      case 'cd':
        break;
      case 'echo':
        out(args.join(' '));
        break;
      case 'nproc':
        out(String(machine.vcpus));
        break;
      case 'free':
        out(
          [
            '               total        used        free      shared  buff/cache   available',
            `Mem:     ${String(machine.memoryMb).padStart(11)} ${String(Math.round(machine.memoryMb * 0.12)).padStart(11)} ${String(Math.round(machine.memoryMb * 0.8)).padStart(11)}           1 ${String(Math.round(machine.memoryMb * 0.08)).padStart(11)} ${String(Math.round(machine.memoryMb * 0.86)).padStart(11)}`,
            'Swap:              0           0           0',
          ].join('\n'),
        );
        break;
      case 'df':
        out(`Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda1       ${machine.diskGb}G  1.9G  ${machine.diskGb - 2}G   5% /`);
        break;
      case 'ip':
      case 'ifconfig':
        out(interfacesOf(machine));
        break;
      case 'cat':
        if (args[0] === '/etc/os-release') out(`PRETTY_NAME="${rescue ? 'Rescue system' : os.pretty}"\nID=${os.id}`);
        else if (args[0] === '/etc/hostname') out(hostname());
        else out(`cat: ${args[0] ?? ''}: No such file or directory`);
        break;
      case 'clear':
        write('\x1b[H\x1b[2J');
        break;
      case 'help':
        out('Commands: hostname, whoami, id, uname, uptime, date, pwd, ls, echo, nproc, free, df, ip, cat, clear, exit, reboot, poweroff');
        break;
      case 'exit':
      case 'logout':
        logout();
        return;
      case 'reboot':
        if (user !== 'root') {
          out('Call Reboot failed: Access denied (try: sudo reboot)');
          break;
        }
        mode = 'booting';
        request('reboot');
        return;
      case 'poweroff':
      case 'halt':
        if (user !== 'root') {
          out('Call PowerOff failed: Access denied');
          break;
        }
        mode = 'booting';
        request('poweroff');
        return;
      case 'sudo':
        if (args[0]) {
          const previous = user;
          user = 'root';
          runCommand(args.join(' '));
          if (mode === 'shell') user = previous;
          return;
        }
        out('usage: sudo command');
        break;
      default:
        out(`-bash: ${command}: command not found`);
    }
    if (mode === 'shell') prompt();
  }

  function logout(): void {
    if (rescue) {
      // The rescue system has no login; its shell comes straight back.
      write('\r\n');
      prompt();
      return;
    }
    user = '';
    mode = 'login';
    loginPrompt();
  }

  function enter(): void {
    const entered = line;
    line = '';
    write('\r\n');
    if (mode === 'login') {
      if (entered.trim() === '') return loginPrompt();
      user = entered.trim();
      mode = 'password';
      write('Password: ');
    } else if (mode === 'password') {
      if (entered === '') {
        write('\r\nLogin incorrect\r\n');
        mode = 'login';
        write(`${hostname()} login: `);
        return;
      }
      mode = 'shell';
      write(`Welcome to ${os.pretty} (GNU/Linux ${os.kernel} x86_64)\r\n\r\n`);
      prompt();
    } else if (mode === 'shell') {
      runCommand(entered);
    }
  }

  return {
    /** The console as it is when someone connects: a running server waits at its login prompt. */
    attach(): void {
      if (power === 'running') {
        mode = 'login';
        loginPrompt();
      } else if (power === 'rescue') {
        rescue = true;
        user = 'root';
        mode = 'shell';
        write('\r\n');
        prompt();
      } else if (power === 'crashed') {
        write('\r\n[  118.220781] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009\r\n');
      }
    },

    /** The hypervisor changed the server: a new boot (reboot, start, rescue), a stop, a crash. */
    powerChanged(next: PowerStatus, rebooted: boolean): void {
      const was = power;
      power = next;
      if (next === 'stopped' || next === 'crashed') {
        cancelPlayback();
        mode = 'off';
        if (was === 'stopped' || was === 'crashed') return;
        if (next === 'crashed') write('\r\n[  118.220781] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009\r\n');
        else for (const text of shutdownLines('poweroff')) write(`${text}\r\n`);
        return;
      }
      if (!rebooted && was === next) return;
      const lines = was === 'running' || was === 'rescue' ? shutdownLines('reboot') : [];
      for (const text of lines) write(`${text}\r\n`);
      boot(next === 'rescue');
    },

    /** Keystrokes from the terminal. */
    input(data: string): void {
      gathered = [];
      try {
        handleInput(data);
      } finally {
        const text = gathered.join('');
        gathered = undefined;
        if (text !== '') writeOut(text);
      }
    },

    close(): void {
      cancelPlayback();
    },
  };

  function handleInput(data: string): void {
    for (const char of data) {
      if (escape) {
        // The rest of an escape sequence (arrow keys and the like): ignored.
        escape += char;
        if (/[A-Za-z~]/.test(char) && escape.length > 1) escape = '';
        continue;
      }
      if (mode === 'off' || mode === 'booting') continue;
      if (char === '\x1b') {
        escape = char;
      } else if (char === '\r' || char === '\n') {
        enter();
      } else if (char === '\x7f' || char === '\b') {
        if (line.length > 0) {
          line = line.slice(0, -1);
          if (mode !== 'password') write('\b \b');
        }
      } else if (char === '\x03') {
        line = '';
        write('^C\r\n');
        if (mode === 'shell') prompt();
        else if (mode === 'login' || mode === 'password') {
          mode = 'login';
          write(`${hostname()} login: `);
        }
      } else if (char === '\x04') {
        if (line === '' && mode === 'shell') {
          write('\r\n');
          logout();
        }
      } else if (char >= ' ') {
        // A full line takes no more (the terminal's line buffer is full), as n_tty drops them.
        if (line.length >= MAX_LINE) continue;
        line += char;
        if (mode !== 'password') write(char);
      }
    }
  }
}

/** The longest line the console's terminal keeps (Linux's n_tty holds 4096 characters, the newline included). */
const MAX_LINE = 4095;

function osName(imageId: string): { pretty: string; id: string; kernel: string } {
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

function bootLog(machine: GuestMachine, rescue: boolean, os: { pretty: string; kernel: string }): string[] {
  const kernel = rescue ? '6.1.0-26-amd64' : os.kernel;
  return [
    `[    0.000000] Linux version ${kernel} (buildd@lcy02-amd64-080) (gcc 13.2.0, GNU ld 2.42) #45-Ubuntu SMP PREEMPT_DYNAMIC`,
    `[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-${kernel} root=${rescue ? '/dev/ram0' : 'LABEL=cloudimg-rootfs'} ro console=tty1 console=ttyS0`,
    '[    0.000000] Hypervisor detected: KVM',
    `[    0.012031] Memory: ${machine.memoryMb * 1024 - 184_320}K/${machine.memoryMb * 1024}K available`,
    `[    0.104512] smpboot: Allowing ${machine.vcpus} CPUs, 0 hotplug CPUs`,
    `[    0.812224] virtio_blk virtio1: [vda] ${machine.diskGb * 2_097_152} 512-byte logical blocks (${machine.diskGb} GB)`,
    rescue
      ? '[    1.201884] Freeing initrd memory: 98304K'
      : '[    1.477120] EXT4-fs (vda1): mounted filesystem with ordered data mode. Quota mode: none.',
    `[    2.016340] systemd[1]: Hostname set to <${rescue ? 'rescue' : machine.name}>.`,
    '[  OK  ] Started systemd-journald.service - Journal Service.',
    '[  OK  ] Reached target network-online.target - Network is Online.',
    ...(rescue ? [] : ['[  OK  ] Finished cloud-init.service - Cloud-init: Network Stage.']),
    '[  OK  ] Started ssh.service - OpenBSD Secure Shell server.',
    '[  OK  ] Reached target multi-user.target - Multi-User System.',
  ];
}
