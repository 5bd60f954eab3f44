import { forEachObject } from './json-walk.ts';
import { objectOf, resolveRef, type Json } from './openapi-json.ts';

/**
 * Every error `code` of the contract with its status and meaning, for the docs page. The codes
 * and the meaning of their status come from the table in the contract's introduction (where a new
 * code is added first, see spec/README.md); the title and an example detail come from the
 * contract's problem examples, and the operations from the responses that carry them.
 */
export interface ErrorCode {
  code: string;
  status: number;
  /** What the status means, from the introduction's table. */
  meaning: string;
  /** The problem's `title`, from an example; undefined when no example shows the code. */
  title?: string;
  detail?: string;
  operations: string[];
}

const ROW = /^\|\s*(\d{3})\s*\|\s*(.+?)\s*\|\s*(.+?)\s*\|\s*$/;

export function errorCodes(document: Json): ErrorCode[] {
  const codes = new Map<string, ErrorCode>();
  for (const line of String(objectOf(document.info).description).split('\n')) {
    const row = ROW.exec(line);
    if (!row) continue;
    for (const code of row[3]!.match(/`([a-z_]+)`/g) ?? []) {
      const name = code.replace(/`/g, '');
      codes.set(name, { code: name, status: Number(row[1]), meaning: row[2]!, operations: [] });
    }
  }
  if (codes.size === 0) throw new Error('the introduction of the contract has no table of error codes');

  forEachObject(document, (node) => {
    const value = objectOf(node.value);
    if (typeof value.code !== 'string' || typeof value.title !== 'string' || typeof value.status !== 'number') return;
    const entry = codes.get(value.code);
    if (!entry) throw new Error(`a problem example uses the code ${value.code}, which the introduction's table does not list`);
    entry.title ??= value.title;
    entry.detail ??= typeof value.detail === 'string' ? value.detail : undefined;
  });

  for (const item of Object.values(objectOf(document.paths))) {
    for (const operation of Object.values(objectOf(item)).map(objectOf)) {
      if (typeof operation.operationId !== 'string') continue;
      const operationId = operation.operationId;
      for (const response of Object.values(objectOf(operation.responses))) {
        forEachObject(resolveRef(document, response).content ?? {}, (node) => {
          if (typeof node.$ref === 'string' && !node.$ref.startsWith('#/components/examples/')) return;
          const code = objectOf(resolveRef(document, node).value).code;
          const entry = typeof code === 'string' ? codes.get(code) : undefined;
          if (entry && !entry.operations.includes(operationId)) entry.operations.push(operationId);
        });
      }
    }
  }
  return [...codes.values()].sort((a, b) => a.status - b.status || a.code.localeCompare(b.code));
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The codes as a Markdown section (the docs page renders it as a page of its own in the menu). */
export function errorCodesMarkdown(codes: ErrorCode[]): string {
  const lines = [
    '## Error codes',
    '',
    'Every code the API answers with, its status and what it means; branch on `code`, not on `title` or',
    '`detail`. The operations that answer with a code list it among their responses, with an example.',
    '',
    '| Code | Status | Meaning | Title | Example detail |',
    '|---|---|---|---|---|',
    ...codes.map(
      (entry) =>
        `| \`${entry.code}\` | ${entry.status} | ${cell(entry.meaning)} | ${cell(entry.title ?? '')} | ${cell(entry.detail ?? '')} |`,
    ),
  ];
  return lines.join('\n');
}
