// Small helpers for calling the real server from the benchmark (seeding, capturing answers).
export interface Api {
  base: string;
  orgId: string;
  key: string;
}

export interface Answer {
  status: number;
  text: string;
}

export async function call(
  api: Api,
  method: string,
  orgPath: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${api.base}/v1/orgs/${api.orgId}${orgPath}`, {
    method,
    headers: {
      Authorization: `Bearer ${api.key}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** Runs `work(index)` for 0…count-1, `concurrency` at a time. */
export async function inParallel(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** A small instance in fra1, named `name`. */
export function vmRequest(name: string): Record<string, unknown> {
  return {
    name,
    image: 'ubuntu-24.04',
    region: 'fra1',
    vcpus: 1,
    memory_mb: 1024,
    disk_gb: 20,
    storage_pool: 'fra1-ssd',
    network_profile: 'fra1-standard',
  };
}

export const mib = (bytes: number) => bytes / 2 ** 20;
