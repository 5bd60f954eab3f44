// --wait: follows an operation to its end with a progress line on stderr, then reads back the
// resource it changed, so that what is printed is the final state (an instance `running`, not the
// `creating` the 202 carried).
import type { PlatformClient } from '../client.ts';
import { ProblemError } from '../errors.ts';
import type { Operation } from '../types.ts';
import type { Io, UntypedClient } from './io.ts';

export async function waitFor(client: PlatformClient, operation: Operation, timeoutSeconds: number, io: Io): Promise<Operation> {
  const started = Date.now();
  let lastLine = '';
  const progress = (current: Operation) => {
    const line = `operation ${current.id} (${current.type}): ${current.state}, attempt ${current.attempt}, ${Math.round((Date.now() - started) / 1000)}s`;
    if (io.isTty) io.stderr(`\r\u001b[2K${line}`);
    else if (line.replace(/, \d+s$/, '') !== lastLine.replace(/, \d+s$/, '')) io.stderr(`${line}\n`);
    lastLine = line;
  };
  progress(operation);
  try {
    const finished = await client.waitForOperation(operation, {
      timeoutMs: timeoutSeconds * 1000,
      onProgress: progress,
      initialIntervalMs: 250,
      maxIntervalMs: 2000,
    });
    progress(finished);
    return finished;
  } finally {
    if (io.isTty) io.stderr('\n');
  }
}

type Reader = (client: PlatformClient, id: string) => Promise<unknown>;
const call = (client: PlatformClient) => (operationId: string, init: unknown) =>
  (client as unknown as UntypedClient).call(operationId, init);

/** How each kind of resource a change returns is read back (by the key it has in the 202 body). */
const READERS: Record<string, Reader> = {
  vm: (client, id) => call(client)('getVm', { path: { vm_id: id } }),
  bucket: (client, id) => call(client)('getBucket', { path: { bucket_id: id } }),
  public_ip: (client, id) => call(client)('getPublicIp', { path: { public_ip_id: id } }),
  firewall: (client, id) => call(client)('getVmFirewall', { path: { vm_id: id } }),
  access_key: async (client, id) => {
    for await (const key of client.paginate('listAccessKeys', { query: { limit: 200 } })) if (key.id === id) return key;
    return undefined;
  },
};

/**
 * The 202 body with the finished operation and each resource as it is now; a resource that is
 * gone (deleted) is left out. A body that was the operation alone is the finished operation.
 */
export async function finalState(client: PlatformClient, body: unknown, finished: Operation): Promise<unknown> {
  const object = body as Record<string, unknown>;
  if (!('operation' in object)) return finished;
  const final: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    if (key === 'operation') final.operation = finished;
    else if (READERS[key] && value && typeof value === 'object') {
      const ownId = (value as { id?: unknown }).id;
      const id = key !== 'firewall' && typeof ownId === 'string' ? ownId : finished.resource_id;
      const now = await READERS[key](client, id).catch((error: unknown) => {
        if (error instanceof ProblemError && error.status === 404) return undefined;
        throw error;
      });
      if (now !== undefined) final[key] = now;
    } else final[key] = value;
  }
  return final;
}
