import type { Backend } from '../../server/drivers/errors.ts';
import type { MatchedRoute } from '../../server/http/route-table.ts';
import type { OperationIdentity } from './mock-operations.ts';

/** The operations of the contract that answer with the platform operation their path names. */
const ANSWER_WITH_THE_PATH_OPERATION = new Set(['getOperation', 'cancelOperation']);

/** The backend an operation on each kind of resource calls, as the server's failure phrases name it. */
const BACKEND_OF_RESOURCE: Record<string, Backend> = {
  vm: 'compute backend',
  public_ip: 'compute backend',
  bucket: 'object store',
  access_key: 'object store',
};

type OperationAnswer = Record<string, unknown> & {
  id: string;
  created_at: string;
  finished_at: string | null;
  error_detail: string | null;
};

/**
 * An operation of the platform read or cancelled by id (`getOperation`, `cancelOperation`) is
 * answered as that operation, in the state of the example served: a client that waits on the
 * operation `createVm` handed it, with `Prefer: example=op_failed`, sees its own `vm.create`
 * fail, not the example's `bucket.create` with another id. Who the operation is (type, resource,
 * creation time) comes from the examples' story when they name it, the id alone otherwise; how
 * it went (state, attempts, how long it took, error) from the example. Any other answer is
 * returned as it is.
 */
export function answerForOperation(route: MatchedRoute, answer: unknown, story: Map<string, OperationIdentity>): unknown {
  const askedId = route.params.operation_id;
  if (!ANSWER_WITH_THE_PATH_OPERATION.has(route.operationId) || askedId === undefined || !isOperationAnswer(answer)) return answer;
  if (answer.id === askedId) return answer;
  const asked = story.get(askedId);
  if (!asked) return { ...answer, id: askedId };
  const tookMs = answer.finished_at === null ? undefined : Date.parse(answer.finished_at) - Date.parse(answer.created_at);
  return {
    ...answer,
    ...asked,
    finished_at: tookMs === undefined ? null : new Date(Date.parse(asked.created_at) + tookMs).toISOString().replace('.000Z', 'Z'),
    error_detail: answer.error_detail === null ? null : failureOf(answer.error_detail, asked),
  };
}

/** The example's failure phrase (server/engine/engine.ts: `… [type]`) said of the asked operation and its backend. */
function failureOf(detail: string, asked: OperationIdentity): string {
  const backend = BACKEND_OF_RESOURCE[asked.resource_type];
  const labelled = detail.replace(/\[[^\]]*\]$/, `[${asked.type}]`);
  return backend ? labelled.replace(/^The (compute backend|object store|billing provider) /, `The ${backend} `) : labelled;
}

function isOperationAnswer(answer: unknown): answer is OperationAnswer {
  if (answer === null || typeof answer !== 'object') return false;
  const candidate = answer as Record<string, unknown>;
  return (
    typeof candidate.id === 'string' &&
    typeof candidate.created_at === 'string' &&
    (candidate.finished_at === null || typeof candidate.finished_at === 'string') &&
    (candidate.error_detail === null || typeof candidate.error_detail === 'string')
  );
}
