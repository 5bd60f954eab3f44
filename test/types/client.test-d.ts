// The client's types follow the contract: wrong calls do not compile (tsc and `vitest --typecheck`
// check every `@ts-expect-error` below is an error).
import { describe, expectTypeOf, test } from 'vitest';
import type { CallInit, ProblemError } from '../../client/index.ts';
import { createPlatformClient, type ItemOf, type Operation, type PaginatedOperationId, type PlatformClient } from '../../client/index.ts';
import type { components } from '../../generated/index.ts';

type Schemas = components['schemas'];
const client: PlatformClient = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', org: 'org', credential: 'cpk_x' });
const vm_id = 'b8a3c5d7-2e4f-4a6b-9c8d-1e3f5a7b9c20';
const createBody: Schemas['VmCreateRequest'] = {
  name: 'web-1',
  image: 'ubuntu-24.04',
  region: 'fra1',
  vcpus: 2,
  memory_mb: 4096,
  disk_gb: 40,
  storage_pool: 'fra1-ssd',
  network_profile: 'fra1-standard',
};

describe('client.call', () => {
  test('resolves with the success body of the operation', () => {
    expectTypeOf(client.call('getVm', { path: { vm_id } })).resolves.toEqualTypeOf<Schemas['VmOut']>();
    expectTypeOf(client.call('createVm', { body: createBody })).resolves.toEqualTypeOf<Schemas['VmAccepted']>();
    expectTypeOf(client.call('getOperation', { path: { operation_id: vm_id } })).resolves.toEqualTypeOf<Operation>();
    expectTypeOf(client.call('deleteSshKey', { path: { ssh_key_id: vm_id } })).resolves.toEqualTypeOf<undefined>();
    expectTypeOf(client.callWithResponse('getBilling')).resolves.toEqualTypeOf<{ data: Schemas['BillingOut']; response: Response }>();
  });

  test('takes no init when the operation needs nothing, and requires it when it does', () => {
    void client.call('getBilling');
    void client.call('listVms');
    void client.call('listVms', { query: { limit: 10, label: ['env=production'] } });
    // @ts-expect-error listImages requires the `region` query parameter
    void client.call('listImages');
    // @ts-expect-error getVm requires its path parameter
    void client.call('getVm');
    // @ts-expect-error an unknown operationId
    void client.call('getVirtualMachine');
  });

  test('path parameters are typed, and `org` comes from the client', () => {
    // @ts-expect-error vm_id is a string
    void client.call('getVm', { path: { vm_id: 42 } });
    // @ts-expect-error a path parameter of another operation
    void client.call('getVm', { path: { bucket_id: vm_id } });
    // @ts-expect-error the client fills `org`
    void client.call('getVm', { path: { vm_id, org: 'another' } });
    // @ts-expect-error getBilling has no path parameters
    void client.call('getBilling', { path: { vm_id } });
  });

  test('request bodies are typed', () => {
    // @ts-expect-error createVm requires its body
    void client.call('createVm', {});
    // @ts-expect-error createVm requires its body
    void client.call('createVm');
    // @ts-expect-error an unknown field (the schema has additionalProperties: false)
    void client.call('createVm', { body: { ...createBody, colour: 'blue' } });
    // @ts-expect-error a required field is missing
    void client.call('createVm', { body: { name: 'web-2' } });
    // @ts-expect-error vcpus is an integer, not a string
    void client.call('createVm', { body: { ...createBody, vcpus: '2' } });
    // @ts-expect-error a GET has no body
    void client.call('getVm', { path: { vm_id }, body: { name: 'x' } });
    // @ts-expect-error query parameters are typed too
    void client.call('listVms', { query: { limit: '10' } });
  });

  test('an operation without query parameters says so, naming itself, where a query is passed', () => {
    // @ts-expect-error getBilling takes no query parameters
    void client.call('getBilling', { query: { limit: 10 } });
    expectTypeOf<CallInit<'getBilling'>['query']>().toEqualTypeOf<'getBilling takes no query parameters' | undefined>();
    expectTypeOf<CallInit<'getBilling'>['path']>().toEqualTypeOf<'getBilling takes no path parameters' | undefined>();
  });

  test('the organization may be left out: the client learns it from getAccount', () => {
    const learning = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', credential: 'cpk_x' });
    expectTypeOf(learning.call('getAccount')).resolves.toEqualTypeOf<Schemas['AccountOut']>();
    expectTypeOf(learning.organization()).resolves.toEqualTypeOf<string>();
  });

  test('spend_budget_cents takes number | bigint | null, exactly as the contract says', () => {
    void client.call('setBillingBudget', { body: { spend_budget_cents: 9223372036854775807n } });
    void client.call('setBillingBudget', { body: { spend_budget_cents: 50_000 } });
    void client.call('setBillingBudget', { body: { spend_budget_cents: null } });
    // @ts-expect-error a string is refused by the contract
    void client.call('setBillingBudget', { body: { spend_budget_cents: '100' } });
    expectTypeOf<Schemas['BillingBudgetRequest']['spend_budget_cents']>().toEqualTypeOf<number | bigint | null>();
    expectTypeOf(client.call('getBilling'))
      .resolves.toHaveProperty('spend_budget_cents')
      .toEqualTypeOf<number | bigint | null | undefined>();
  });
});

describe('client.paginate', () => {
  test('yields the item type of the list', () => {
    expectTypeOf(client.paginate('listVms')).toEqualTypeOf<AsyncGenerator<Schemas['VmOut'], void, undefined>>();
    expectTypeOf(client.paginate('listRegions')).toEqualTypeOf<AsyncGenerator<Schemas['RegionOut'], void, undefined>>();
    expectTypeOf<ItemOf<'listOperations'>>().toEqualTypeOf<Operation>();
    void client.paginate('listImages', { query: { region: 'fra1', limit: 200 } });
  });

  test('accepts only list operations', () => {
    expectTypeOf<'listVms'>().toExtend<PaginatedOperationId>();
    expectTypeOf<'getVm'>().not.toExtend<PaginatedOperationId>();
    // @ts-expect-error getVm is not a list
    void client.paginate('getVm', { path: { vm_id } });
    // @ts-expect-error createVm is not a list
    void client.paginate('createVm', { body: createBody });
    // @ts-expect-error listImages requires `region`
    void client.paginate('listImages');
  });
});

describe('waitForOperation and errors', () => {
  test('are typed', () => {
    expectTypeOf(client.waitForOperation(vm_id)).resolves.toEqualTypeOf<Operation>();
    expectTypeOf(client.waitForOperation).parameter(0).toEqualTypeOf<Operation | string>();
    // @ts-expect-error pass the operation (`accepted.operation`), not the accepted resource
    void client.waitForOperation({} as Schemas['VmAccepted']);
    expectTypeOf<ProblemError['code']>().toEqualTypeOf<string>();
    expectTypeOf<ProblemError['fieldErrors']>().toEqualTypeOf<Schemas['ProblemFieldError'][]>();
    expectTypeOf<ProblemError['response']>().toEqualTypeOf<Response>();
  });
});
