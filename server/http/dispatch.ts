import type { Request, Response } from 'express';
import { operationRoutes, type OperationHandlers, type OperationId } from '../../generated/operations.ts';
import type { RequestContext } from '../core/request-context.ts';
import { stateOf } from './request-state.ts';
import { sendJson } from './send.ts';

type AnyHandler = (
  request: unknown,
  context: RequestContext,
) => Promise<{ status: number; body?: unknown; headers?: Record<string, string> }>;

/**
 * The last stage of the pipeline: calls the handler of the operation the router matched
 * (route-table.ts, driven by the generated route table), with the path parameters it decoded.
 * The handler table is typed by the generated `OperationHandlers`, so a missing or mistyped
 * handler does not compile; start-up also refuses, naming them, if any is missing at run time.
 */
export function dispatch(handlers: OperationHandlers<RequestContext>) {
  const operationIds = Object.keys(operationRoutes) as OperationId[];
  const missing = operationIds.filter((operationId) => typeof handlers[operationId] !== 'function');
  if (missing.length > 0) throw new Error(`no handler for operations: ${missing.join(', ')}`);
  return async (req: Request, res: Response): Promise<void> => {
    const state = stateOf(res);
    const route = state.route!;
    const handler = handlers[route.operationId] as unknown as AnyHandler;
    const context: RequestContext = {
      requestId: state.requestId,
      get principal() {
        if (!state.principal) throw new Error(`${route.operationId} takes no credential: it has no principal`);
        return state.principal;
      },
      get log() {
        return state.log;
      },
      idempotency: state.idempotency ? { key: state.idempotency.key, claim: state.idempotency.claim } : undefined,
      get audit() {
        if (!state.audit) throw new Error(`${route.operationId} takes no credential: it has no audit trail`);
        return state.audit;
      },
    };
    const result = await handler(
      {
        path: route.params,
        query: { ...(req.query as object) },
        headers: { 'Idempotency-Key': req.get('Idempotency-Key') },
        body: req.body as unknown,
      },
      context,
    );
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    sendJson(res, result.status, result.body, result.status >= 400 ? 'application/problem+json' : 'application/json');
  };
}
