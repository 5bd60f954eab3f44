import { createRequire } from 'node:module';

/**
 * Spares AJV a walk through the whole contract for every schema it compiles.
 *
 * AJV collects the `$id`s and anchors of each schema it is given by walking all of it
 * (json-schema-traverse, every key). express-openapi-validator 5.6 gives it, for the request and
 * for each response of every operation, a schema that carries the whole contract beside it
 * (`paths` and `components`, dereferenced: every shared schema expanded wherever it is used), so
 * each compile walked the contract again. That walk was 88% of the CPU of an operation's first
 * request (0.33–0.44 s each; a restart spent 0.45 s of its 1.1 s on it, for the warm-up's
 * /healthz). With it skipped: 0.03–0.13 s, and a restart answers in 0.7 s.
 *
 * The walk exists to find `$id`s and anchors; the contract has none, so inside it the walk finds
 * nothing. Keys named `paths` and `components` are skipped (no JSON Schema keyword has either
 * name; a property of that name, under `properties`, is still walked). A contract that does hold
 * an `$id` or an anchor is walked whole, as before.
 *
 * The list of skipped keys is json-schema-traverse's own (`traverse.skipKeywords`, documented),
 * in the copy the validator's AJV loads.
 */
export function skipContractInIdScan(contractText: string): boolean {
  if (/"\$(id|anchor|dynamicAnchor)"\s*:/.test(contractText)) return false;
  const fromValidator = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
  const fromAjv = createRequire(fromValidator.resolve('ajv'));
  const traverse = fromAjv('json-schema-traverse') as { skipKeywords: Record<string, boolean> };
  traverse.skipKeywords.paths = true;
  traverse.skipKeywords.components = true;
  return true;
}
