// One fuzz case: a valid request for an operation, changed by at most one mutation. A case is a
// function of (seed, operation, index) and the target's real ids only, so any case can be
// regenerated on its own to reproduce a failure.
import { bodyMutators } from './body-mutations.ts';
import type { FuzzContract, OperationSpec } from './contract.ts';
import { render, validDraft, type FuzzRequest, type FuzzTarget } from './draft.ts';
import type { Mutation, MutationContext, Mutator } from './mutation.ts';
import { Random } from './random.ts';
import { requestMutators } from './request-mutations.ts';
import type { SchemaCheck } from './schema-check.ts';
import { ValueGenerator } from './values.ts';

export interface FuzzCase {
  seed: number;
  operationId: string;
  index: number;
  mutation: Mutation;
  request: FuzzRequest;
}

const MUTATORS: Mutator[] = [...bodyMutators, ...requestMutators];
/** Turns of an unchanged request in the weighted part of the cycle: valid requests must work, not only be refused. */
const VALID_WEIGHT = 4;

type Turn = Mutator | 'valid';

export class CaseGenerator {
  private readonly values: ValueGenerator;
  private readonly firstPasses = new Map<string, Turn[]>();

  private readonly contract: FuzzContract;
  private readonly schemas: SchemaCheck;
  private readonly target: FuzzTarget;

  constructor(contract: FuzzContract, schemas: SchemaCheck, target: FuzzTarget) {
    this.contract = contract;
    this.schemas = schemas;
    this.target = target;
    this.values = new ValueGenerator(contract, schemas);
  }

  /**
   * Case 0 is valid; the next cases give every mutator that applies one turn, in an order
   * shuffled by the seed, so that even a short run tries each kind of damage once; after that,
   * turns are drawn by weight.
   */
  generate(seed: number, operation: OperationSpec, index: number): FuzzCase {
    const random = Random.forCase(seed, operation.operationId, index);
    const draft = validDraft(operation, this.target, random, this.values);
    const context: MutationContext = { random, contract: this.contract, schemas: this.schemas, values: this.values, target: this.target };
    const applicable = MUTATORS.map((mutator) => [mutator.weight(operation), mutator] as const).filter(([weight]) => weight > 0);
    const firstPass = this.firstPass(
      seed,
      operation,
      applicable.map(([, mutator]) => mutator),
    );
    let turn: Turn = index < firstPass.length ? firstPass[index]! : random.weighted<Turn>([[VALID_WEIGHT, 'valid'], ...applicable]);
    for (let attempt = 0; turn !== 'valid' && attempt < 5; attempt++) {
      const applied = turn.apply(draft, context);
      if (applied)
        return {
          seed,
          operationId: operation.operationId,
          index,
          mutation: { kind: turn.kind, ...applied },
          request: render(draft, this.target),
        };
      // Nothing to change in this particular draft (no string to damage, say): another kind.
      turn = random.weighted(applicable);
    }
    const mutation: Mutation = { kind: 'valid', description: 'as generated from the contract', mustRefuse: false };
    return { seed, operationId: operation.operationId, index, mutation, request: render(draft, this.target) };
  }

  private firstPass(seed: number, operation: OperationSpec, mutators: Mutator[]): Turn[] {
    const key = `${seed}/${operation.operationId}`;
    let pass = this.firstPasses.get(key);
    if (!pass) {
      const random = new Random(`${key}/order`);
      const shuffled = [...mutators];
      for (let index = shuffled.length - 1; index > 0; index--) {
        const other = random.int(0, index);
        [shuffled[index], shuffled[other]] = [shuffled[other]!, shuffled[index]!];
      }
      pass = ['valid', ...shuffled];
      this.firstPasses.set(key, pass);
    }
    return pass;
  }
}
