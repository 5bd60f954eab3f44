// What the CLI prints: tables (and key/value lists) for people, exact JSON for scripts, and
// problem documents as readable errors with their field pointers.
import { stringifyJson } from '../json.ts';
import type { ProblemError } from '../errors.ts';

export type OutputFormat = 'table' | 'json';

const scalar = (value: unknown): string => {
  if (value === null || value === undefined) return '-';
  // Numbers and bigints exactly as they came (2^63-1 stays 9223372036854775807).
  return typeof value === 'string' ? value : (stringifyJson(value) ?? '');
};

/** A list as a table of its items' scalar fields (at most eight columns), anything else as key: value lines. */
export function render(body: unknown, format: OutputFormat): string {
  if (format === 'json') return `${stringifyJson(body, 2) ?? 'null'}\n`;
  if (body === undefined) return '';
  if (body !== null && typeof body === 'object' && Array.isArray((body as { items?: unknown }).items)) {
    const { items, next_cursor: nextCursor } = body as { items: Array<Record<string, unknown>>; next_cursor?: string | null };
    if (items.length === 0) return 'No items.\n';
    const columns = Object.keys(items[0]!)
      .filter((key) => items.every((item) => item[key] === null || typeof item[key] !== 'object'))
      .slice(0, 8);
    const rows = [columns.map((column) => column.toUpperCase()), ...items.map((item) => columns.map((column) => scalar(item[column])))];
    const widths = columns.map((_, index) => Math.max(...rows.map((row) => row[index]!.length)));
    const lines = rows.map((row) =>
      row
        .map((cell, index) => cell.padEnd(widths[index]!))
        .join('  ')
        .trimEnd(),
    );
    return `${lines.join('\n')}\n${nextCursor ? `(more: --cursor ${nextCursor})\n` : ''}`;
  }
  if (body !== null && typeof body === 'object') {
    return `${Object.entries(body)
      .map(([key, value]) => `${key}: ${scalar(value)}`)
      .join('\n')}\n`;
  }
  return `${scalar(body)}\n`;
}

/** `Error: Title (code): detail`, then one line per failing field, then the request id. */
export function renderProblem(error: ProblemError): string {
  const lines = [`Error: ${error.title} (${error.code}): ${error.detail}`];
  for (const field of error.fieldErrors) lines.push(`  ${field.pointer || '(body)'}: ${field.detail}`);
  lines.push(`  request id: ${error.requestId}`);
  return `${lines.join('\n')}\n`;
}
