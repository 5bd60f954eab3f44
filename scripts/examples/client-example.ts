// A tour of the typed client against a running server:
//   npm start                                   # in another terminal; writes data/bootstrap.json
//   npx tsx scripts/examples/client-example.ts
// Credentials come from PLATFORM_BASE_URL, PLATFORM_ORG_ID and PLATFORM_API_KEY when set, else
// from DATA_DIR/bootstrap.json (DATA_DIR defaults to ./data), which the server writes on first start.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createPlatformClient, OperationFailedError, ProblemError } from '../../client/index.ts';

function credentials(): { base_url: string; org_id: string; api_key: string } {
  const { PLATFORM_BASE_URL, PLATFORM_ORG_ID, PLATFORM_API_KEY } = process.env;
  if (PLATFORM_BASE_URL && PLATFORM_ORG_ID && PLATFORM_API_KEY) {
    return { base_url: PLATFORM_BASE_URL, org_id: PLATFORM_ORG_ID, api_key: PLATFORM_API_KEY };
  }
  return JSON.parse(readFileSync(path.join(process.env.DATA_DIR ?? 'data', 'bootstrap.json'), 'utf8'));
}

const { base_url, org_id, api_key } = credentials();
const client = createPlatformClient({ baseUrl: base_url, org: org_id, credential: api_key });

try {
  // A typed call: the result is a RegionsPage; `org` is filled in by the client.
  const { items: regions } = await client.call('listRegions');
  console.log('regions:', regions.map((region) => region.id).join(', '));
  const region = regions[0]!;

  const { items: images } = await client.call('listImages', { query: { region: region.id } });
  const image = images[0]!;

  // Every POST gets an Idempotency-Key; pass your own to be able to repeat the request safely later.
  const { data: accepted, response } = await client.callWithResponse('createVm', {
    headers: { 'Idempotency-Key': randomUUID() },
    body: {
      name: `example-${Date.now().toString(36)}`,
      image: image.id,
      region: region.id,
      vcpus: 1,
      memory_mb: Math.max(1024, image.min_ram_mb),
      disk_gb: Math.max(20, image.min_disk_gb),
      storage_pool: region.storage_pools[0]!.id,
      network_profile: region.network_profiles[0]!.id,
    },
  });
  console.log(`created ${accepted.vm.name} (${accepted.vm.id}), replayed: ${response.headers.get('idempotent-replayed') === 'true'}`);

  // Poll the operation until it has finished; a failure rejects with OperationFailedError.
  const operation = await client.waitForOperation(accepted.operation, {
    timeoutMs: 120_000,
    onProgress: (op) => console.log(`  ${op.type}: ${op.state} (attempt ${op.attempt}/${op.max_attempts})`),
  });
  console.log(`operation ${operation.id} ${operation.state} at ${operation.finished_at}`);

  // Every instance of the organization, page after page.
  for await (const vm of client.paginate('listVms', { query: { limit: 50 } })) {
    console.log(`  ${vm.name.padEnd(24)} ${vm.state.padEnd(10)} ${vm.region_id}`);
  }

  // The spend budget goes up to 2^63-1 cents: send a bigint, get a bigint back, exactly.
  const billing = await client.call('setBillingBudget', { body: { spend_budget_cents: 9223372036854775807n } });
  console.log('budget:', billing.spend_budget_cents, typeof billing.spend_budget_cents);

  // Errors are ProblemErrors: branch on `code`, quote `requestId` to support.
  await client.call('getVm', { path: { vm_id: randomUUID() } });
} catch (error) {
  if (error instanceof ProblemError) {
    console.error(`${error.status} ${error.code}: ${error.detail} (request ${error.requestId})`);
    for (const field of error.fieldErrors) console.error(`  ${field.pointer}: ${field.detail}`);
  } else if (error instanceof OperationFailedError) {
    console.error(`operation ${error.state}: ${error.errorClass} ${error.errorDetail}`);
  } else {
    throw error;
  }
}
