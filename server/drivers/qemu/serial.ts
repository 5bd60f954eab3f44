import { open, stat } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import type { ConsoleAttachment, ConsoleSink } from '../hypervisor.ts';
import type { ServerFiles } from './layout.ts';

/** How much of what the guest wrote before a console attached is shown first (the login prompt, the last lines). */
const REPLAY_BYTES = 2048;
/** How often a console whose QEMU is not running (stopped, restarting) tries its serial socket again. */
const RECONNECT_MS = 300;

/**
 * The serial port of one server, shared by the consoles attached to it in this process. QEMU's
 * socket takes one client at a time, so the driver holds one connection per server and fans what
 * the guest writes out to every console, and every console's keystrokes in. The connection
 * follows the server through its stops and restarts (a new QEMU makes a new socket at the same
 * path) until the last console detaches, or the server is deleted.
 */
export class SerialPort {
  private readonly sinks = new Set<ConsoleSink>();
  private socket: Socket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private decoder = new StringDecoder('utf8');
  private readonly files: ServerFiles;
  /** Whether the server still exists (a deleted one ends its consoles). */
  private readonly exists: () => Promise<boolean>;
  /** The last console detached: the port can be forgotten. */
  private readonly onIdle: () => void;

  constructor(files: ServerFiles, exists: () => Promise<boolean>, onIdle: () => void) {
    this.files = files;
    this.exists = exists;
    this.onIdle = onIdle;
  }

  async attach(sink: ConsoleSink): Promise<ConsoleAttachment> {
    const replay = await lastOutput(this.files.serialLog);
    if (replay) sink.output(replay);
    this.sinks.add(sink);
    if (!this.socket && !this.timer) this.connect();
    return {
      input: (data) => {
        if (this.sinks.has(sink)) this.socket?.write(data);
      },
      detach: () => {
        if (!this.sinks.delete(sink) || this.sinks.size > 0) return;
        this.close();
        this.onIdle();
      },
    };
  }

  private connect(): void {
    this.timer = undefined;
    if (this.sinks.size === 0) return;
    const socket = connect(this.files.serialSocket);
    socket.on('connect', () => {
      this.socket = socket;
      this.decoder = new StringDecoder('utf8');
    });
    socket.on('data', (chunk: Buffer) => {
      const text = this.decoder.write(chunk);
      if (text) for (const sink of this.sinks) sink.output(text);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      if (this.sinks.size > 0) void this.retry();
    });
  }

  /** The QEMU is gone (stopped, restarting): try again shortly, unless the server was deleted. */
  private async retry(): Promise<void> {
    if (!(await this.exists())) {
      const sinks = [...this.sinks];
      this.close();
      for (const sink of sinks) sink.ended('server_deleted');
      this.onIdle();
      return;
    }
    if (this.sinks.size > 0 && !this.timer && !this.socket) {
      this.timer = setTimeout(() => this.connect(), RECONNECT_MS);
      this.timer.unref();
    }
  }

  /** Ends every console of the server (it is being deleted). */
  end(): void {
    const sinks = [...this.sinks];
    this.close();
    for (const sink of sinks) sink.ended('server_deleted');
  }

  private close(): void {
    this.sinks.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.socket?.destroy();
    this.socket = undefined;
  }
}

/** The end of the serial log, from a line start, so that a console opens on the guest's latest screen. */
async function lastOutput(logFile: string): Promise<string> {
  try {
    const { size } = await stat(logFile);
    const start = Math.max(0, size - REPLAY_BYTES);
    const handle = await open(logFile, 'r');
    try {
      const buffer = Buffer.alloc(size - start);
      await handle.read(buffer, 0, buffer.length, start);
      const text = buffer.toString('utf8');
      return start === 0 ? text : text.slice(text.indexOf('\n') + 1);
    } finally {
      await handle.close();
    }
  } catch {
    return '';
  }
}
