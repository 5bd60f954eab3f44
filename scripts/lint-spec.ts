// Lints the contract: Redocly (recommended-strict plus our rules, redocly.yaml) on the sources and
// on the bundle, Spectral (spectral:oas, the OWASP API Security ruleset and the layout rules of
// spec/README.md, .spectral.yaml) on the bundle, with spectral:oas's two example rules run here
// (lib/example-checks.ts), and the root's path layout (lib/spec-layout.ts). Any finding, error or
// warning, fails. The bundle is linted as well as the sources because a component that is only
// `$ref`'d from the root index looks "used" in the sources.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleSpec, specRoot } from './lib/bundle.ts';
import { exampleFindings } from './lib/example-checks.ts';
import { bin, repoRoot, run } from './lib/run.ts';
import { rootLayoutFindings } from './lib/spec-layout.ts';
import { wideBounds } from './lib/wide-bounds.ts';
import { parse } from 'lossless-json';

interface Finding {
  tool: string;
  severity: string;
  rule: string;
  where: string;
  message: string;
}

interface RedoclyReport {
  totals: { errors: number; warnings: number };
  problems: Array<{
    ruleId: string;
    severity: string;
    message: string;
    location: Array<{ source: { ref: string }; pointer?: string }>;
  }>;
}

interface SpectralResult {
  code: string;
  severity: number;
  message: string;
  path: Array<string | number>;
}

const SPECTRAL_SEVERITY = ['error', 'warning', 'info', 'hint'];

async function redoclyLint(target: string): Promise<Finding[]> {
  const result = await run(bin('redocly'), ['lint', target, '--format', 'json', '--max-problems', '1000']);
  const report = parseJsonOutput<RedoclyReport>(result.stdout, `redocly lint ${target}`, result.stderr);
  return report.problems.map((problem) => {
    const location = problem.location[0];
    return {
      tool: 'redocly',
      severity: problem.severity,
      rule: problem.ruleId,
      where: location ? `${path.relative(repoRoot, location.source.ref)}${location.pointer ?? ''}` : target,
      message: problem.message,
    };
  });
}

async function spectralLint(target: string): Promise<Finding[]> {
  const result = await run(bin('spectral'), ['lint', target, '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet']);
  const results = parseJsonOutput<SpectralResult[]>(result.stdout || '[]', `spectral lint ${target}`, result.stderr);
  return results
    .filter((finding) => finding.severity <= 1)
    .map((finding) => ({
      tool: 'spectral',
      severity: SPECTRAL_SEVERITY[finding.severity] ?? String(finding.severity),
      rule: finding.code,
      where: `bundle#/${finding.path.join('/')}`,
      message: finding.message,
    }));
}

function parseJsonOutput<T>(stdout: string, what: string, stderr: string): T {
  const start = stdout.search(/[[{]/);
  try {
    return JSON.parse(stdout.slice(start)) as T;
  } catch {
    throw new Error(`${what} did not print a JSON report:\n${stdout}\n${stderr}`);
  }
}

const workDir = mkdtempSync(path.join(tmpdir(), 'spec-lint-'));
try {
  const bundled = path.join(workDir, 'openapi.json');
  const bundle = await bundleSpec();
  writeFileSync(bundled, bundle);
  const findings = [
    ...(await redoclyLint(specRoot)),
    ...(await redoclyLint(bundled)).map((finding) => ({ ...finding, where: finding.where.replace(/^.*openapi\.json/, 'bundle') })),
    ...(await spectralLint(bundled)),
    // Two rules of spectral:oas, run here with each schema compiled once (lib/example-checks.ts).
    ...exampleFindings(JSON.parse(bundle) as Record<string, unknown>).map((finding) => ({
      tool: 'spectral',
      severity: 'error',
      rule: finding.rule,
      where: `bundle${finding.where}`,
      message: finding.message,
    })),
    ...rootLayoutFindings(readFileSync(specRoot, 'utf8')).map((finding) => ({
      tool: 'layout',
      severity: 'error',
      rule: 'layout-path-refs',
      ...finding,
    })),
    ...wideBounds(parse(bundle))
      .filter((wide) => !wide.stated)
      .map((wide) => ({
        tool: 'docs',
        severity: 'error',
        rule: 'wide-bound-stated',
        where: `a schema with ${wide.bound} ${wide.value}${typeof wide.schema.title === 'string' ? ` (${wide.schema.title})` : ''}`,
        message: 'a bound beyond ±2^53-1 must be stated in the description: the docs page leaves it out, as it would print it rounded',
      })),
  ];
  // One exemption, narrow: the responses of the `webhooks` section are the answers of the
  // customers' receivers, which carry whatever headers they like; the headers every response of
  // the API carries (X-Request-Id, RateLimit-*) are the API's own.
  const receiversAnswer = (finding: Finding) =>
    finding.rule === 'response-contains-header' && /(^bundle#\/webhooks\/|^spec\/resources\/events\/webhooks\/)/.test(finding.where);
  findings.splice(0, findings.length, ...findings.filter((finding) => !receiversAnswer(finding)));
  for (const finding of findings) {
    console.log(`${finding.tool} ${finding.severity} ${finding.rule} at ${finding.where}\n    ${finding.message}`);
  }
  if (findings.length > 0) {
    console.error(`\nspec:lint: ${findings.length} finding(s); the contract must lint clean.`);
    process.exitCode = 1;
  } else {
    console.log(
      'spec:lint: Redocly (sources and bundle), Spectral (spectral:oas + OWASP + layout rules) and the root layout: no findings.',
    );
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
