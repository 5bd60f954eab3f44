import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bundled contract (`npm run generate` writes it; never edited by hand). */
export const CONTRACT_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'generated', 'openapi.json');

let text: string | undefined;
let document: Record<string, unknown> | undefined;

/** The bundled contract's text, read once per thread. */
export function contractText(): string {
  return (text ??= readFileSync(CONTRACT_PATH, 'utf8'));
}

/**
 * The bundled contract, parsed once per thread for the modules that read rules from it (bounds
 * beyond 2^53 as JS numbers). Shared: read it, never change it. Reading and parsing its 0.8 MB
 * cost 35 ms of a start each time, and three modules did it.
 */
export function contractDocument(): Record<string, unknown> {
  return (document ??= JSON.parse(contractText()) as Record<string, unknown>);
}
