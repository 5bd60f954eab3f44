// Real guests (COMPUTE_DRIVER=qemu, the tiny test image): how long until an instance answers SSH
// and its console, how long start and stop take, and what one instance costs in memory. Under TCG
// on a machine without hardware virtualisation (the driver says which in its log); one guest at a
// time, so that the figures are a guest's own and not two guests sharing two cores.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { residentBytes } from '../../server/drivers/qemu/processes.ts';
import { call, mib, type Api } from './api.ts';
import { record, section } from './report.ts';
import type { RunningServer } from './servers.ts';

const run = promisify(execFile);

export const QEMU_ENV = { COMPUTE_DRIVER: 'qemu', RECONCILE_INTERVAL_MS: '1000', WORKER_POLL_MS: '50' };

/** Why the section cannot run here, if it cannot. */
export function qemuMissing(testImageDir: string): string | undefined {
  for (const tool of ['qemu-system-x86_64', 'qemu-img', 'genisoimage', 'ssh', 'ssh-keygen']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  if (!existsSync(path.join(testImageDir, 'image.json'))) return `no test image in ${testImageDir} (scripts/qemu/build-test-image.sh)`;
  return undefined;
}

export async function qemuSection(server: RunningServer, workDir: string, rounds: number): Promise<void> {
  section('real guests (COMPUTE_DRIVER=qemu, tiny test image)');
  const api = server.api;
  const keyFile = path.join(workDir, 'bench-key');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile]);
  await expectStatus(
    call(api, 'POST', '/compute/ssh-keys', { name: 'bench', public_key: readFileSync(`${keyFile}.pub`, 'utf8').trim() }),
    201,
  );
  const accelerator = /guests run under (KVM|TCG)/.exec(server.child.output())?.[1] ?? 'unknown';

  const figures: Record<string, number[]> = { ssh: [], console: [], start: [], startSsh: [], stop: [], memory: [] };
  for (let round = 0; round < rounds; round++) {
    const began = performance.now();
    const created = JSON.parse(
      (
        await expectStatus(
          call(api, 'POST', '/compute/vms', {
            name: `bench-${round}`,
            image: 'tiny',
            region: 'fra1',
            vcpus: 1,
            memory_mb: 512,
            disk_gb: 10,
            storage_pool: 'fra1-ssd',
            network_profile: 'fra1-standard',
            ssh_keys: ['bench'],
          }),
          202,
        )
      ).text,
    ) as { vm: { id: string }; operation: { id: string } };
    const vmId = created.vm.id;
    // Queued behind the create, applied as soon as the server exists.
    await expectStatus(
      call(api, 'PUT', `/compute/vms/${vmId}/firewall`, { inbound: [{ protocol: 'tcp', ports: '22', sources: ['0.0.0.0/0'] }] }),
      202,
    );
    await operationDone(api, created.operation.id);
    const address = await publicAddress(api, vmId);
    const [sshReady, consoleReady] = await Promise.all([sshReadyAt(keyFile, address), consoleReadyAt(api, vmId)]);
    figures.ssh!.push(sshReady - began);
    figures.console!.push(consoleReady - began);
    const pid = Number(readFileSync(path.join(server.dataDir, 'qemu', 'servers', vmId, 'qemu.pid'), 'utf8'));
    figures.memory!.push((await residentBytes(pid)) ?? 0);

    let mark = performance.now();
    await operationDone(api, await action(api, vmId, 'stop'));
    figures.stop!.push(performance.now() - mark);
    mark = performance.now();
    await operationDone(api, await action(api, vmId, 'start'));
    figures.start!.push(performance.now() - mark);
    figures.startSsh!.push((await sshReadyAt(keyFile, address)) - mark);
    const deleted = JSON.parse((await expectStatus(call(api, 'DELETE', `/compute/vms/${vmId}`), 202)).text) as {
      operation: { id: string };
    };
    await operationDone(api, deleted.operation.id);
  }
  const seconds = (values: number[]) => `${(median(values) / 1000).toFixed(1)} s`;
  const of = `median of ${rounds}, ${accelerator}`;
  record({ figure: `create → SSH login (${of})`, real: seconds(figures.ssh!) });
  record({ figure: `create → console shows the shell (${of})`, real: seconds(figures.console!) });
  record({ figure: `stop: ACPI power-off, operation done (${of})`, real: seconds(figures.stop!) });
  record({ figure: `start: operation done (${of})`, real: seconds(figures.start!) });
  record({ figure: `start → SSH login (${of})`, real: seconds(figures.startSsh!) });
  record({ figure: `QEMU resident memory per idle instance of 512 MiB (${of})`, real: `${mib(median(figures.memory!)).toFixed(0)} MiB` });
}

async function expectStatus(answer: Promise<{ status: number; text: string }>, status: number) {
  const settled = await answer;
  if (settled.status !== status) throw new Error(`expected ${status}, got ${settled.status}: ${settled.text}`);
  return settled;
}

async function action(api: Api, vmId: string, verb: string): Promise<string> {
  return (JSON.parse((await expectStatus(call(api, 'POST', `/compute/vms/${vmId}/${verb}`), 202)).text) as { operation: { id: string } })
    .operation.id;
}

async function operationDone(api: Api, operationId: string): Promise<void> {
  for (;;) {
    const operation = JSON.parse((await call(api, 'GET', `/operations/${operationId}`)).text) as { state: string; error_detail: string };
    if (operation.state === 'succeeded') return;
    if (operation.state === 'failed' || operation.state === 'cancelled')
      throw new Error(`operation ${operation.state}: ${operation.error_detail}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function publicAddress(api: Api, vmId: string): Promise<string> {
  for (;;) {
    const vm = JSON.parse((await call(api, 'GET', `/compute/vms/${vmId}`)).text) as {
      observed_addresses: { public_ipv4: string[] } | null;
    };
    const address = vm.observed_addresses?.public_ipv4[0];
    if (address) return address;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** When an SSH login with the key first succeeds. */
async function sshReadyAt(keyFile: string, address: string): Promise<number> {
  const options = ['-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=error'];
  for (;;) {
    try {
      await run('ssh', ['-i', keyFile, ...options, '-o', 'ConnectTimeout=5', `root@${address}`, 'true'], { timeout: 15_000 });
      return performance.now();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** When the console, requested and collected through the API, shows the guest's shell prompt. */
async function consoleReadyAt(api: Api, vmId: string): Promise<number> {
  const requested = JSON.parse((await expectStatus(call(api, 'POST', `/compute/vms/${vmId}/console`), 202)).text) as {
    operation: { id: string };
  };
  await operationDone(api, requested.operation.id);
  const collected = JSON.parse((await call(api, 'GET', `/compute/vms/${vmId}/console?operation=${requested.operation.id}`)).text) as {
    url: string;
  };
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(collected.url);
    let text = '';
    // The shell may have printed its prompt before the console attached: Enter asks for another.
    const nudge = setInterval(() => socket.readyState === WebSocket.OPEN && socket.send('\r'), 1_000);
    socket.on('message', (data: Buffer) => {
      text += data.toString('utf8');
      if (/# (\u001b\[6n)?$/.test(text)) {
        clearInterval(nudge);
        socket.close();
        resolve(performance.now());
      }
    });
    socket.on('error', (error) => {
      clearInterval(nudge);
      reject(error);
    });
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
