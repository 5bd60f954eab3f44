// The contract's own Problem schema, compiled: every problem document the server writes must pass it.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { loadBundle } from './contract.ts';

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
// The components hold every schema; their $refs (#/components/schemas/…) resolve inside them.
ajv.addSchema({ $id: 'contract', components: loadBundle().components }, 'contract');
const validateProblem = ajv.getSchema('contract#/components/schemas/Problem')!;

/** The schema's complaints about a problem document; empty when it conforms. */
export function problemSchemaErrors(document: unknown): string[] {
  return validateProblem(document) ? [] : (validateProblem.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}
