import type { PowerStatus } from '../hypervisor.ts';
import { osName, runGuestCommand, type GuestMachine, type GuestSession } from './simulated-guest-shell.ts';

export type { GuestMachine };

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

  /** A line typed at the shell: the command's answer (simulated-guest-shell.ts), then the next prompt. */
  function runCommand(commandLine: string): void {
    const [command = '', ...args] = commandLine.trim().split(/\s+/);
    const outcome = runGuestCommand(shell, command, args);
    if (outcome === 'done') return;
    if (outcome === 'logout') return logout();
    if (outcome === 'reboot' || outcome === 'poweroff') {
      mode = 'booting';
      request(outcome);
      return;
    }
    if (mode === 'shell') prompt();
  }

  /** What the shell's commands see of the session. */
  const shell: GuestSession = {
    machine,
    os,
    get user() {
      return user;
    },
    set user(name: string) {
      user = name;
    },
    get rescue() {
      return rescue;
    },
    get bootedAt() {
      return bootedAt;
    },
    get atShell() {
      return mode === 'shell';
    },
    hostname,
    write,
    run: (commandLine) => runCommand(commandLine),
  };

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
