import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Every integer literal in the YAML files under `dir` that a JavaScript number cannot hold
 * exactly (such as the spend budget's maximum, 9223372036854775807).
 */
export function collectUnsafeIntegers(dir: string): bigint[] {
  const found = new Set<bigint>();
  for (const file of yamlFiles(dir)) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'), { intAsBigInt: true })) {
      visit(doc.toJS(), (value) => {
        if (typeof value === 'bigint' && (value > MAX_SAFE || value < -MAX_SAFE)) found.add(value);
      });
    }
  }
  return [...found].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Redocly parses YAML into JavaScript numbers, so it writes 9223372036854775807 as
 * 9223372036854776000. Puts the exact literals back: each unsafe literal of the sources is
 * found by the double it was rounded to. Refuses when two literals round to the same double
 * (the text could not say which was meant), and when any integer token beyond 2^53 remains that
 * no source literal explains.
 */
export function restoreExactIntegers(jsonText: string, literals: bigint[]): string {
  const byRounded = new Map<string, bigint>();
  for (const literal of literals) {
    const rounded = Number(literal).toString();
    const earlier = byRounded.get(rounded);
    if (earlier !== undefined && earlier !== literal) {
      throw new Error(`integer literals ${earlier} and ${literal} both round to ${rounded}; the bundle cannot tell them apart`);
    }
    byRounded.set(rounded, literal);
  }
  return replaceNumberTokens(jsonText, (token) => {
    if (!/^-?\d+$/.test(token)) return token;
    const literal = byRounded.get(token);
    if (literal !== undefined) return literal.toString();
    const value = BigInt(token);
    if (value > MAX_SAFE || value < -MAX_SAFE) {
      throw new Error(`the bundle holds the integer ${token}, beyond 2^53, that no source literal explains`);
    }
    return token;
  });
}

/** Rewrites every number token of a JSON text, leaving string literals untouched. */
function replaceNumberTokens(jsonText: string, rewrite: (token: string) => string): string {
  return jsonText.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (token) =>
    token.startsWith('"') ? token : rewrite(token),
  );
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.ya?ml$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

function visit(value: unknown, onValue: (value: unknown) => void): void {
  onValue(value);
  if (Array.isArray(value)) value.forEach((item) => visit(item, onValue));
  else if (value !== null && typeof value === 'object') Object.values(value).forEach((item) => visit(item, onValue));
}
