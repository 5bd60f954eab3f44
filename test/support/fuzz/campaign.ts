// A fuzz campaign: for each operation, a batch of cases sent one after the other and judged, then
// a plain GET that must still be answered within a second.
import { CaseGenerator, type FuzzCase } from './cases.ts';
import { loadFuzzContract, type FuzzContract, type OperationSpec } from './contract.ts';
import type { FuzzTarget } from './draft.ts';
import { Oracle, type Failure } from './oracle.ts';
import { SchemaCheck } from './schema-check.ts';
import { send, type Outcome } from './send.ts';

export interface CaseFailure {
  fuzzCase: FuzzCase;
  outcome: Outcome;
  failures: Failure[];
}

export interface BatchResult {
  operation: OperationSpec;
  cases: number;
  failed: CaseFailure[];
  /** How often each status answered each mutation kind (`no answer` as 0): what the cases reached. */
  statuses: Map<string, Map<number, number>>;
  /** Set when the server did not answer the plain GET after the batch. */
  unresponsive: string | undefined;
  elapsedMs: number;
}

export interface CampaignOptions {
  seed: number;
  /** How long one request may take before it counts as unanswered. */
  timeoutMs?: number;
}

/** Reads first, then changes, then deletions: a deleted fixture would turn later cases into 404s. */
export function fuzzingOrder(operations: OperationSpec[]): OperationSpec[] {
  const rank = (operation: OperationSpec) => (operation.method === 'GET' ? 0 : operation.method === 'DELETE' ? 2 : 1);
  return [...operations].sort((left, right) => rank(left) - rank(right));
}

export class Campaign {
  readonly contract: FuzzContract;
  private readonly schemas: SchemaCheck;
  private readonly oracle: Oracle;

  constructor(contract: FuzzContract = loadFuzzContract()) {
    this.contract = contract;
    this.schemas = new SchemaCheck(contract);
    this.oracle = new Oracle(contract, this.schemas);
  }

  generator(target: FuzzTarget): CaseGenerator {
    return new CaseGenerator(this.contract, this.schemas, target);
  }

  /** Cases [from, to) of one operation, then the liveness check. */
  async runBatch(target: FuzzTarget, operation: OperationSpec, options: CampaignOptions, from: number, to: number): Promise<BatchResult> {
    const started = performance.now();
    const generator = this.generator(target);
    const failed: CaseFailure[] = [];
    const statuses = new Map<string, Map<number, number>>();
    for (let index = from; index < to; index++) {
      const result = await this.runCase(target, generator.generate(options.seed, operation, index), options);
      if (result.failures.length > 0) failed.push(result);
      const byStatus = statuses.get(result.fuzzCase.mutation.kind) ?? new Map<number, number>();
      const status = 'answer' in result.outcome ? result.outcome.answer.status : 0;
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      statuses.set(result.fuzzCase.mutation.kind, byStatus);
    }
    const unresponsive = await stillAnswers(target, options.timeoutMs ?? 10_000);
    return { operation, cases: to - from, failed, statuses, unresponsive, elapsedMs: Math.round(performance.now() - started) };
  }

  async runCase(target: FuzzTarget, fuzzCase: FuzzCase, options: CampaignOptions): Promise<CaseFailure> {
    const outcome = await send(target.baseUrl, fuzzCase.request, options.timeoutMs ?? 10_000);
    return { fuzzCase, outcome, failures: this.oracle.judge(fuzzCase, outcome) };
  }
}

/**
 * undefined when the organization's own GET answers 200; else what happened. Given as long as a
 * case (`timeoutMs`): a server the batch froze never answers, and how fast a live one answers
 * depends on the machine, not on what the batch did.
 */
export async function stillAnswers(target: FuzzTarget, timeoutMs: number): Promise<string | undefined> {
  const started = performance.now();
  try {
    const response = await fetch(`${target.baseUrl}/v1/orgs/${target.orgId}`, {
      headers: { Authorization: `Bearer ${target.ownerKey}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.arrayBuffer();
    if (response.status !== 200) return `GET /v1/orgs/{org} answered ${response.status}`;
    return undefined;
  } catch (error) {
    return `GET /v1/orgs/{org} had no answer after ${Math.round(performance.now() - started)} ms: ${(error as Error).message}`;
  }
}
