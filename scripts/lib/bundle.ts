import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { collectUnsafeIntegers, restoreExactIntegers } from './exact-integers.ts';
import { bin, repoRoot, run } from './run.ts';

export const specRoot = path.join(repoRoot, 'spec', process.env.SPEC_ROOT ?? 'openapi.yaml');
export const bundlePath = path.join(repoRoot, 'generated', 'openapi.json');

/**
 * Bundles the multi-file contract into one JSON document with `redocly bundle`, then restores
 * the integer literals that Redocly rounds to doubles. Returns the exact JSON text.
 */
export async function bundleSpec(): Promise<string> {
  const workDir = mkdtempSync(path.join(tmpdir(), 'spec-bundle-'));
  try {
    const output = path.join(workDir, 'openapi.json');
    const result = await run(bin('redocly'), ['bundle', specRoot, '--output', output, '--ext', 'json']);
    if (result.code !== 0) {
      throw new Error(`redocly bundle failed:\n${result.stdout}\n${result.stderr}`);
    }
    const rounded = readFileSync(output, 'utf8');
    const exact = restoreExactIntegers(rounded, collectUnsafeIntegers(path.dirname(specRoot)));
    return exact.endsWith('\n') ? exact : `${exact}\n`;
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
