import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The contract as the server loads it: the bundle without its prose and examples, every rule kept
 * (`npm run generate` writes it from generated/openapi.json; never edited by hand). A quarter of
 * the bundle's size: the validator parses, dereferences and walks all of it at every start.
 */
export const CONTRACT_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'generated', 'openapi.runtime.json');

// Held weakly: the modules that read rules from the contract do so as they load, all in the same
// few turns of a start, and keep only what they read. Held strongly, the text and the document
// (about 0.9 MB of heap; 2.5 MB for the whole bundle) would stay for the process's life, in each
// thread that read them.
let text: WeakRef<{ value: string }> | undefined;
let document: WeakRef<Record<string, unknown>> | undefined;

/** The contract's text, read once for the modules that ask while it is still held. */
export function contractText(): string {
  let held = text?.deref();
  if (held === undefined) {
    held = { value: readFileSync(CONTRACT_PATH, 'utf8') };
    text = new WeakRef(held);
  }
  return held.value;
}

/**
 * The contract, parsed once for the modules that read rules from it as they load (bounds beyond
 * 2^53 as JS numbers). Shared: read it, never change it. Three modules read rules from it; each
 * reading and parsing the whole bundle's 0.8 MB for itself cost 35 ms of a start.
 */
export function contractDocument(): Record<string, unknown> {
  let held = document?.deref();
  if (held === undefined) {
    held = JSON.parse(contractText()) as Record<string, unknown>;
    document = new WeakRef(held);
  }
  return held;
}
