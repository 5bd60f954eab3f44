import { mockOperations } from './mock-operations.ts';

/**
 * The named examples of every operation, as a front-end developer choosing mock answers needs
 * them: `Prefer: example=<name>` makes the mock serve that example, with the status it belongs to.
 */
export function examplesByOperation(
  document: Record<string, unknown>,
): Array<{ operationId: string; examples: Array<[string, number[]]> }> {
  return [...mockOperations(document).values()].map((operation) => ({
    operationId: operation.operationId,
    examples: [...operation.examples],
  }));
}

/** One line of Markdown: `name` (status), … */
export const examplesLine = (examples: Array<[string, number[]]>): string =>
  examples.map(([name, statuses]) => `\`${name}\` (${statuses.join(', ')})`).join(', ');

export const EXAMPLES_INDEX_START = '<!-- examples-index: start (written by `npm run spec:examples`; do not edit) -->';
export const EXAMPLES_INDEX_END = '<!-- examples-index: end -->';

/** The section of spec/README.md that lists them, between its markers. */
export function examplesIndexMarkdown(document: Record<string, unknown>): string {
  const rows = examplesByOperation(document).map(({ operationId, examples }) => {
    const [success, errors] = splitBySuccess(examples);
    return `| \`${operationId}\` | ${examplesLine(success)} | ${examplesLine(errors)} |`;
  });
  return [
    EXAMPLES_INDEX_START,
    '',
    '| operation | success examples (status) | error examples (status) |',
    '|---|---|---|',
    ...rows,
    '',
    EXAMPLES_INDEX_END,
  ].join('\n');
}

/** The examples of success statuses, and those of errors. */
export function splitBySuccess(examples: Array<[string, number[]]>): [Array<[string, number[]]>, Array<[string, number[]]>] {
  const isSuccess = ([, statuses]: [string, number[]]) => statuses.some((status) => status < 300);
  return [examples.filter(isSuccess), examples.filter((example) => !isSuccess(example))];
}

/** `readme` with its examples section replaced by `section`. */
export function withExamplesIndex(readme: string, section: string): string {
  const start = readme.indexOf(EXAMPLES_INDEX_START);
  const end = readme.indexOf(EXAMPLES_INDEX_END);
  if (start < 0 || end < start) throw new Error('spec/README.md has no examples-index markers');
  return `${readme.slice(0, start)}${section}${readme.slice(end + EXAMPLES_INDEX_END.length)}`;
}
