// `cloud vm console NAME`: this terminal attached to the instance's serial console. It requests a
// console (a vm.console operation), waits for it, collects the single-use URL and connects to it
// with a WebSocket: what the instance writes goes to stdout, what is typed goes to the instance
// (the terminal in raw mode, so that every key, Ctrl-C included, reaches it). Ctrl-] detaches,
// as in telnet; the terminal is restored however the session ends.
import type { PlatformClient } from '../client.ts';
import { EXIT, type Io } from './io.ts';

/** Ctrl-] (GS), telnet's escape. */
export const DETACH = '\u001d';

export async function attachConsole(client: PlatformClient, vmId: string, io: Io, timeoutSeconds: number): Promise<number> {
  const requested = await client.call('requestConsole', { path: { vm_id: vmId } });
  const { waitFor } = await import('./wait.ts');
  const finished = await waitFor(client, requested.operation, timeoutSeconds, io);
  const collected = await client.call('collectConsole', { path: { vm_id: vmId }, query: { operation: finished.id } });
  if (collected.console_type !== 'serial') {
    io.stderr(
      `cloud: this instance offers a ${collected.console_type} console, which a terminal cannot show; open ${collected.url} with a VNC client (within ${collected.expires_in_seconds} s)\n`,
    );
    return EXIT.failed;
  }
  const { default: WebSocket } = await import('ws');
  const socket = new WebSocket(collected.url);
  const stdin = process.stdin;
  const raw = stdin.isTTY === true;
  let detached = false;

  const restore = () => {
    if (raw && stdin.isTTY) stdin.setRawMode(false);
    stdin.pause();
    stdin.removeListener('data', onInput);
  };
  function onInput(chunk: Buffer) {
    const text = chunk.toString('utf8');
    const at = text.indexOf(DETACH);
    if (at >= 0) {
      if (at > 0 && socket.readyState === socket.OPEN) socket.send(text.slice(0, at));
      detached = true;
      socket.close(1000, 'detached');
      return;
    }
    if (socket.readyState === socket.OPEN) socket.send(text);
  }

  return await new Promise<number>((resolve) => {
    const finish = (code: number, message: string) => {
      restore();
      process.removeListener('exit', restoreOnExit);
      io.stderr(message);
      resolve(code);
    };
    // However the process ends, the terminal is left as it was found.
    const restoreOnExit = () => {
      if (raw && stdin.isTTY) stdin.setRawMode(false);
    };
    process.once('exit', restoreOnExit);
    socket.on('unexpected-response', (_request, response) => {
      socket.terminate();
      finish(EXIT.refused, `cloud: the console gateway refused the connection (HTTP ${response.statusCode}); try again\n`);
    });
    socket.on('error', (error) => finish(EXIT.unavailable, `cloud: console connection failed: ${error.message}\n`));
    socket.on('open', () => {
      io.stderr(
        `Connected to the serial console${raw ? '' : ' (input is not a terminal: lines are sent as they come)'}. Ctrl-] detaches.\r\n`,
      );
      if (raw) stdin.setRawMode(true);
      stdin.on('data', onInput);
      stdin.on('end', () => {
        // Input ended (a pipe): keep showing the console until the session ends or is detached.
      });
      stdin.resume();
    });
    socket.on('message', (data: Buffer) => io.stdout(data.toString('utf8')));
    socket.on('close', (code: number, reason: Buffer) => {
      if (detached) finish(EXIT.ok, '\r\nDetached from the console.\r\n');
      else
        finish(
          code === 1000 ? EXIT.ok : EXIT.unavailable,
          `\r\nThe console session ended (${code}${reason.length ? `: ${reason.toString()}` : ''}).\r\n`,
        );
    });
  });
}
