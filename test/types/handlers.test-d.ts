// The generated handler types hold the server to the contract: a wrong status, a body of the wrong
// shape or a missing operation does not compile, and requests arrive typed.
import { describe, expectTypeOf, test } from 'vitest';
import type {
  components,
  CreateVmHandler,
  CreateVmRequest,
  DeleteSshKeyHandler,
  GetVmHandler,
  OperationHandlers,
  SetBillingBudgetHandler,
} from '../../generated/index.ts';
import type { operationRoutes } from '../../generated/operations.ts';

type Schemas = components['schemas'];
interface Ctx {
  userId: string;
}
declare const accepted: Schemas['VmAccepted'];
declare const vm: Schemas['VmOut'];
declare const problem: Schemas['Problem'];

describe('generated handler types', () => {
  test('a handler answering as the contract says compiles', () => {
    const createVm: CreateVmHandler<Ctx> = async (request, context) => {
      expectTypeOf(context).toEqualTypeOf<Ctx>();
      expectTypeOf(request.body).toEqualTypeOf<Schemas['VmCreateRequest']>();
      return request.body.name === 'taken' ? { status: 409, body: problem } : { status: 202, body: accepted };
    };
    const deleteSshKey: DeleteSshKeyHandler<Ctx> = async () => ({ status: 204, body: undefined });
    void createVm;
    void deleteSshKey;
  });

  test('a success status the contract does not declare does not compile', () => {
    // @ts-expect-error createVm answers 202 (an asynchronous create), not 201
    const createVm: CreateVmHandler<Ctx> = async () => ({ status: 201, body: accepted });
    // @ts-expect-error getVm answers 200, not 202
    const getVm: GetVmHandler<Ctx> = async () => ({ status: 202, body: vm });
    void createVm;
    void getVm;
  });

  test('a body of the wrong shape does not compile', () => {
    // @ts-expect-error a 202 of createVm is a VmAccepted ({vm, operation}), not a bare VmOut
    const bareVm: CreateVmHandler<Ctx> = async () => ({ status: 202, body: vm });
    // @ts-expect-error an error status carries a Problem, not the resource
    const wrongError: GetVmHandler<Ctx> = async () => ({ status: 404, body: vm });
    // @ts-expect-error a field of the wrong type
    const wrongField: GetVmHandler<Ctx> = async () => ({ status: 200, body: { ...vm, vcpus: 'two' } });
    // @ts-expect-error a required field missing
    const missingField: GetVmHandler<Ctx> = async () => ({ status: 200, body: { name: vm.name } });
    // @ts-expect-error a 204 has no body
    const bodyOn204: DeleteSshKeyHandler<Ctx> = async () => ({ status: 204, body: vm });
    void [bareVm, wrongError, wrongField, missingField, bodyOn204];
  });

  test('an OperationHandlers object missing an operation does not compile', () => {
    type AllButGetVm = Omit<OperationHandlers<Ctx>, 'getVm'>;
    const partial = {} as AllButGetVm;
    // @ts-expect-error getVm is missing
    const handlers: OperationHandlers<Ctx> = partial;
    void handlers;
    expectTypeOf<AllButGetVm>().not.toExtend<OperationHandlers<Ctx>>();
    expectTypeOf<keyof OperationHandlers<Ctx>>().toEqualTypeOf<keyof typeof operationRoutes>();
  });

  test('requests are typed: path parameters, headers and bodies', () => {
    const getVm: GetVmHandler<Ctx> = async (request) => {
      expectTypeOf(request.path).toEqualTypeOf<{ org: string; vm_id: string }>();
      // @ts-expect-error getVm has no bucket_id
      void request.path.bucket_id;
      return { status: 200, body: vm };
    };
    expectTypeOf<CreateVmRequest['headers']>().toEqualTypeOf<{ 'Idempotency-Key'?: string }>();
    const setBudget: SetBillingBudgetHandler<Ctx> = async (request) => {
      expectTypeOf(request.body.spend_budget_cents).toEqualTypeOf<number | bigint | null>();
      // @ts-expect-error a request body is read-only input: no field beyond the schema
      void request.body.currency;
      return { status: 400, body: problem };
    };
    void [getVm, setBudget];
  });
});
