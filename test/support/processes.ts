import path from 'node:path';
import { commandLineOf, descendantsOf, freePort, startProcess, waitForHttp, type Started } from '../../scripts/lib/processes.ts';
import { repoRoot } from '../../scripts/lib/run.ts';

export { commandLineOf, descendantsOf, freePort, startProcess, waitForHttp, type Started };

/**
 * Starts the mock (`scripts/mock.ts`) on a port found free, and waits until `readyPath` answers.
 * A port found free can be taken by another socket before the mock binds it (the ephemeral range
 * is shared with every outgoing connection of the machine): such a start is retried on a new port.
 * Prism, behind the mock, binds a port the system hands it, which cannot collide.
 */
export async function startMock(readyPath = '/healthz', attempts = 3): Promise<{ mock: Started; baseUrl: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const mock = startProcess(process.execPath, [path.join(repoRoot, 'scripts', 'mock.ts'), '--port', String(port)]);
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${baseUrl}${readyPath}`, mock);
      return { mock, baseUrl };
    } catch (error) {
      await mock.stop();
      if (attempt >= attempts || !mock.output().includes('EADDRINUSE')) throw error;
    }
  }
}
