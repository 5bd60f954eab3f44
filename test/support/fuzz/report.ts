// Failure reports a person can act on: each failing case printed as the exact request (method,
// target, every header, the body's bytes), the answer, and the command that regenerates it; and
// summaries grouped by kind and signature, one reproduction per group.
import type { BatchResult, CaseFailure } from './campaign.ts';
import type { FuzzRequest } from './draft.ts';
import type { FailureKind } from './oracle.ts';

const BODY_PREVIEW = 400;

/** The request as text: the owner's key is replaced by `<owner key>`, long values abbreviated with their length. */
export function formatRequest(request: FuzzRequest, ownerKey: string): string {
  const redact = (text: string) => text.split(ownerKey).join('<owner key>');
  const lines = [`${request.method} ${abbreviate(redact(request.target), 300)} HTTP/1.1`];
  for (const [name, value] of request.headers) lines.push(`${name}: ${abbreviate(redact(value), 200)}`);
  lines.push(`body: ${formatBytes(request.body)}`);
  return lines.join('\n');
}

/** Bytes as a JSON string literal when they are UTF-8 (escapes show control characters), else as hex. */
export function formatBytes(bytes: Buffer | undefined): string {
  if (bytes === undefined) return '(none)';
  if (bytes.length === 0) return '(empty)';
  const text = bytes.toString('utf8');
  const isUtf8 = Buffer.from(text, 'utf8').equals(bytes);
  if (isUtf8) {
    const shown = text.length > BODY_PREVIEW ? `${text.slice(0, BODY_PREVIEW / 2)}…${text.slice(-BODY_PREVIEW / 4)}` : text;
    return `${bytes.length} bytes, UTF-8: ${JSON.stringify(shown)}${text.length > BODY_PREVIEW ? ' (middle left out)' : ''}`;
  }
  const hex = bytes
    .subarray(0, BODY_PREVIEW / 2)
    .toString('hex')
    .replace(/(..)/g, '$1 ')
    .trim();
  return `${bytes.length} bytes, not UTF-8, hex: ${hex}${bytes.length > BODY_PREVIEW / 2 ? ' …' : ''}`;
}

function abbreviate(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length} characters)` : text;
}

export function formatFailure(failure: CaseFailure, ownerKey: string): string {
  const { fuzzCase, outcome } = failure;
  const answer =
    'error' in outcome
      ? `→ ${outcome.error}`
      : `→ ${outcome.answer.status} ${outcome.answer.headers['content-type'] ?? '(no content type)'} ${abbreviate(outcome.answer.body.toString('utf8'), 600) || '(no body)'}`;
  return [
    ...failure.failures.map((item) => `[${item.kind}] ${item.signature}: ${item.detail}`),
    `${fuzzCase.operationId}, seed ${fuzzCase.seed}, case ${fuzzCase.index}, ${fuzzCase.mutation.kind}: ${fuzzCase.mutation.description}`,
    indent(formatRequest(fuzzCase.request, ownerKey)),
    indent(answer),
    `  replay: npm run fuzz -- --seed ${fuzzCase.seed} --operation ${fuzzCase.operationId} --case ${fuzzCase.index}`,
  ].join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

export interface FailureGroup {
  kind: FailureKind;
  signature: string;
  count: number;
  operations: Set<string>;
  example: CaseFailure;
}

/** Failures grouped by (kind, signature), largest groups first within each kind. */
export function groupFailures(failed: CaseFailure[]): FailureGroup[] {
  const groups = new Map<string, FailureGroup>();
  for (const caseFailure of failed) {
    for (const failure of caseFailure.failures) {
      const key = `${failure.kind}\u0000${failure.signature}`;
      const group = groups.get(key) ?? {
        kind: failure.kind,
        signature: failure.signature,
        count: 0,
        operations: new Set(),
        example: caseFailure,
      };
      group.count++;
      group.operations.add(caseFailure.fuzzCase.operationId);
      groups.set(key, group);
    }
  }
  return [...groups.values()].sort((left, right) => left.kind.localeCompare(right.kind) || right.count - left.count);
}

/** The failures of one batch, for an assertion message: grouped, one reproduction per group. */
export function formatBatch(batch: BatchResult, ownerKey: string): string {
  const groups = groupFailures(batch.failed);
  const lines = [
    `${batch.failed.length} of ${batch.cases} cases of ${batch.operation.operationId} failed, ${groups.length} distinct failures:`,
  ];
  for (const group of groups)
    lines.push('', `${group.count}× [${group.kind}] ${group.signature}`, indent(formatFailure(group.example, ownerKey)));
  if (batch.unresponsive) lines.push('', `[unresponsive] after the batch: ${batch.unresponsive}`);
  return lines.join('\n');
}

/** A whole campaign: counts by kind, then every group with the operations it touched and one reproduction. */
export function formatSummary(batches: BatchResult[], ownerKey: string, seed: number): string {
  const cases = batches.reduce((sum, batch) => sum + batch.cases, 0);
  const failed = batches.flatMap((batch) => batch.failed);
  const groups = groupFailures(failed);
  const operations = new Set(batches.map((batch) => batch.operation.operationId)).size;
  const lines = [
    `Fuzz campaign, seed ${seed}: ${cases} cases over ${operations} operations, ${failed.length} failed, ${groups.length} distinct failures.`,
  ];
  lines.push('', 'What the cases reached (mutation kind: answers by status):', ...formatCoverage(batches), '', 'Failures by kind:');
  const byKind = new Map<string, number>();
  for (const group of groups) byKind.set(group.kind, (byKind.get(group.kind) ?? 0) + group.count);
  for (const [kind, count] of byKind) lines.push(`  ${kind}: ${count}`);
  const unresponsive = batches.filter((batch) => batch.unresponsive);
  for (const batch of unresponsive) lines.push(`  unresponsive after ${batch.operation.operationId}: ${batch.unresponsive}`);
  for (const group of groups) {
    lines.push(
      '',
      `${group.count}× [${group.kind}] ${group.signature}`,
      `  operations: ${[...group.operations].join(', ')}`,
      indent(formatFailure(group.example, ownerKey)),
    );
  }
  return lines.join('\n');
}

/** Per mutation kind, how many answers had each status: shows whether cases reach the handlers or stop early. */
function formatCoverage(batches: BatchResult[]): string[] {
  const byKind = new Map<string, Map<string, number>>();
  for (const batch of batches) {
    for (const [kind, statuses] of batch.statuses) {
      const classes = byKind.get(kind) ?? new Map<string, number>();
      for (const [status, count] of statuses) {
        const name = status === 0 ? 'no answer' : String(status);
        classes.set(name, (classes.get(name) ?? 0) + count);
      }
      byKind.set(kind, classes);
    }
  }
  return [...byKind.entries()]
    .sort(([left], [right]) => left.localeCompare(right))
    .map(
      ([kind, classes]) =>
        `  ${kind.padEnd(26)} ${[...classes.entries()]
          .sort(([left], [right]) => left.localeCompare(right))
          .map(([name, count]) => `${name}: ${count}`)
          .join(', ')}`,
    );
}
