import type { NextFunction, Request, Response } from 'express';
import { validationFailed, type FieldError } from '../core/errors.ts';
import { stateOf } from './request-state.ts';
import { contractDocument } from '../core/contract-document.ts';

/**
 * Integer query parameters are read from their decimal digits only. The validator coerces query
 * strings with `+value`, so `limit=Infinity`, `1e400` or `0x10` would pass as numbers (ajv's
 * coercion even skips the bounds for Infinity) and reach the database.
 */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

interface ContractParameter {
  name?: string;
  in?: string;
  schema?: { type?: string | string[] };
}

/** The names of each operation's integer query parameters, read once from the contract. */
const integerQueryParameters: Map<string, string[]> = (() => {
  const byOperation = new Map<string, string[]>();
  const contract = contractDocument() as {
    paths?: Record<string, Record<string, unknown>>;
    components?: { parameters?: Record<string, ContractParameter> };
  };
  const resolve = (parameter: ContractParameter & { $ref?: string }): ContractParameter =>
    parameter.$ref ? (contract.components?.parameters?.[parameter.$ref.split('/').pop()!] ?? {}) : parameter;
  for (const pathItem of Object.values(contract.paths ?? {})) {
    const shared = (pathItem.parameters as ContractParameter[] | undefined) ?? [];
    for (const operation of Object.values(pathItem)) {
      const { operationId, parameters } = (operation ?? {}) as { operationId?: string; parameters?: ContractParameter[] };
      if (!operationId) continue;
      const names = [...shared, ...(parameters ?? [])]
        .map(resolve)
        .filter((parameter) => parameter.in === 'query' && [parameter.schema?.type].flat().includes('integer'))
        .map((parameter) => parameter.name!);
      if (names.length > 0) byOperation.set(operationId, names);
    }
  }
  return byOperation;
})();

/** 400 validation_failed for an integer query parameter not written in decimal digits. */
export function queryLiterals(req: Request, res: Response, next: NextFunction): void {
  const names = integerQueryParameters.get(stateOf(res).route?.operationId ?? '');
  if (!names) return next();
  const queryStart = req.url.indexOf('?');
  const query = new URLSearchParams(queryStart === -1 ? '' : req.url.slice(queryStart + 1));
  const errors: FieldError[] = [];
  for (const name of names) {
    // An empty value is left to the validator, which names it as such.
    if (query.getAll(name).some((value) => value !== '' && !DECIMAL_INTEGER.test(value))) {
      errors.push({ pointer: `/query/${name}`, detail: 'must be an integer written in decimal digits' });
    }
  }
  if (errors.length > 0) throw validationFailed(errors);
  next();
}
