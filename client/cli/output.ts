// What the CLI prints: tables (and key/value lists) for people, exact JSON or YAML for scripts, and
// problem documents as readable errors, their field pointers named as the command's flags.
import { stringifyJson } from '../json.ts';
import type { ProblemError } from '../errors.ts';
import { isTrue, last, UsageError } from './args.ts';
import { cell, columnNames, columnsFor } from './columns.ts';
import { contract, resolveSchema, type Command } from './commands.ts';
import { didYouMean } from './suggest.ts';

export type OutputFormat = 'table' | 'json' | 'yaml';

export interface RenderOptions {
  format: OutputFormat;
  /** The schema the body follows (`VmList`, `VmAccepted`, `VmOut`), to choose the table's columns. */
  schemaName: string | undefined;
  /** --columns */
  columns?: string[] | undefined;
  /** false with --no-header. */
  header?: boolean;
}

type Item = Record<string, unknown>;

/** The schema name of a property of `schemaName` (`VmAccepted.vm` → `VmOut`, `VmList.items` → `VmOut`). */
function propertySchema(schemaName: string | undefined, property: string): string | undefined {
  if (!schemaName) return undefined;
  const schema = contract().components.schemas[schemaName];
  const raw = schema?.properties?.[property];
  if (!raw) return undefined;
  const resolved = resolveSchema(raw);
  return resolved.schema.type === 'array' || [resolved.schema.type].flat().includes('array')
    ? resolveSchema(resolved.schema.items).name
    : resolved.name;
}

function fieldsOf(schemaName: string | undefined): string[] {
  return Object.keys((schemaName && contract().components.schemas[schemaName]?.properties) || {});
}

/** A table of items, with the kind's default columns or the ones asked for. */
export function table(items: Item[], schemaName: string | undefined, options: Pick<RenderOptions, 'columns' | 'header'> = {}): string {
  if (options.columns && schemaName) {
    const known = columnNames(schemaName, fieldsOf(schemaName));
    const unknown = options.columns.find((name) => !known.includes(name.toLowerCase()) && !name.includes('.'));
    if (unknown)
      throw new UsageError(`--columns: no column "${unknown}"${didYouMean(unknown.toLowerCase(), known)} (columns: ${known.join(', ')})`);
  }
  if (items.length === 0) return options.header === false ? '' : 'No items.\n';
  const columns = columnsFor(schemaName, items, options.columns);
  const rows = items.map((item) => columns.map((column) => cell(column.value(item))));
  if (options.header !== false) rows.unshift(columns.map((column) => column.name.toUpperCase()));
  const widths = columns.map((_, index) => Math.max(...rows.map((row) => row[index]!.length)));
  return `${rows
    .map((row) =>
      row
        .map((text, index) => text.padEnd(widths[index]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/** `key: value` lines, nested objects flattened with dotted keys. */
function details(body: Item, prefix = ''): string[] {
  return Object.entries(body).flatMap(([key, value]) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0
      ? details(value as Item, `${prefix}${key}.`)
      : [`${prefix}${key}: ${cell(value)}`],
  );
}

export const isOperation = (value: unknown): boolean =>
  value !== null && typeof value === 'object' && typeof (value as Item).id === 'string' && 'attempt' in value && 'state' in value;

/** The answer for people: lists as tables, a change as its resource's row and its operation, anything else as key: value lines. */
function forPeople(body: unknown, options: RenderOptions): string {
  if (body === undefined) return '';
  if (body === null || typeof body !== 'object') return `${cell(body)}\n`;
  const object = body as Item;
  if (Array.isArray(object.items)) {
    const more = typeof object.next_cursor === 'string' ? `(more: --cursor ${object.next_cursor}, or --all)\n` : '';
    return table(object.items as Item[], propertySchema(options.schemaName, 'items'), options) + (options.header === false ? '' : more);
  }
  if (isOperation(object)) return table([object], 'OperationRef', options);
  // A change: `{operation, vm}`, `{operation, bucket}`…: the resource as a row, then the operation.
  if (isOperation(object.operation)) {
    const operation = object.operation as Item;
    const resources = Object.entries(object).filter(([key, value]) => key !== 'operation' && value !== null && typeof value === 'object');
    const rows = resources.map(([key, value]) => table([value as Item], propertySchema(options.schemaName, key), options));
    const scalars = Object.entries(object).filter(([key, value]) => key !== 'operation' && (value === null || typeof value !== 'object'));
    const extra = scalars.map(([key, value]) => `${key}: ${cell(value)}\n`).join('');
    const finished = operation.finished_at != null;
    const line = `operation ${String(operation.id)} (${String(operation.type)}): ${String(operation.state)}${finished ? '' : '; follow it with --wait, or `cloud operation get ' + String(operation.id) + '`'}\n`;
    return `${rows.join('')}${extra}${line}`;
  }
  return `${details(object).join('\n')}\n`;
}

export async function render(body: unknown, options: RenderOptions): Promise<string> {
  if (options.format === 'json') return `${stringifyJson(body ?? null, 2)}\n`;
  if (options.format === 'yaml') {
    const { stringify } = await import('yaml');
    return stringify(body ?? null);
  }
  return forPeople(body, options);
}

/** The flag a problem's pointer names, for a command: `/memory_mb` → `--memory-mb`, `/query/limit` → `--limit`. */
function flagOfPointer(pointer: string, command: Command | undefined): string | undefined {
  if (!command) return undefined;
  const [first, second] = pointer.split('/').slice(1);
  const name = first === 'query' ? second : first;
  const flag = command.flags.find(
    (candidate) => candidate.name === name && (first === 'query' ? candidate.in === 'query' : candidate.in === 'body'),
  );
  return flag ? `--${flag.flag}` : undefined;
}

/** `Error: Title (code): detail`, then one line per failing field (with its flag), then the request id. */
export function renderProblem(error: ProblemError, command?: Command): string {
  const lines = [`Error: ${error.title} (${error.code}): ${error.detail}`];
  for (const field of error.fieldErrors) {
    const flag = flagOfPointer(field.pointer, command);
    lines.push(`  ${field.pointer || '(body)'}${flag ? ` (${flag})` : ''}: ${field.detail}`);
  }
  lines.push(`  request id: ${error.requestId}`);
  return `${lines.join('\n')}\n`;
}

export function outputOf(flags: Map<string, string[]>): OutputFormat {
  const format = last(flags, 'output') ?? 'table';
  if (format !== 'table' && format !== 'json' && format !== 'yaml')
    throw new UsageError(`--output is table, json or yaml${didYouMean(format, ['table', 'json', 'yaml'])}`);
  return format;
}

export function renderOptions(flags: Map<string, string[]>, schemaName: string | undefined): RenderOptions {
  const columns = last(flags, 'columns')
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  return { format: outputOf(flags), schemaName, columns, header: !isTrue(flags, 'no-header') };
}
