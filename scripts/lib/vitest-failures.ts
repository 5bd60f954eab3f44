// The failed tests of a vitest run, read from its JSON report (`--reporter=json
// --outputFile.json=…`), for a summary printed where a reader of a long log looks: at its end.
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The part of vitest's JSON report read here. */
interface JsonReport {
  testResults: Array<{
    name: string;
    status: string;
    message?: string;
    assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
  }>;
}

/** vitest's arguments for its usual output on the terminal and its JSON report in `reportFile`. */
export function reporterArgs(reportFile: string): string[] {
  return ['--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`];
}

/** How many lines of each failure the summary keeps: the assertion and where it failed. */
const LINES_KEPT = 6;

function firstLines(message: string): string {
  return message
    .split('\n')
    .slice(0, LINES_KEPT)
    .map((line) => `      ${line}`)
    .join('\n');
}

/**
 * One entry per failed test (its file, its full name and the start of its failure), and one per
 * file that failed with no failed test (an error in a hook, or in loading the file). A report
 * that is missing or unreadable is an entry of its own: vitest stopped before writing it.
 */
export function failedTests(reportFile: string, root: string): string[] {
  let report: JsonReport;
  try {
    report = JSON.parse(readFileSync(reportFile, 'utf8')) as JsonReport;
  } catch {
    return [`  no report at ${reportFile}: vitest stopped before writing it; its output says why`];
  }
  const entries: string[] = [];
  for (const file of report.testResults) {
    const where = path.relative(root, file.name);
    const failed = file.assertionResults.filter(({ status }) => status === 'failed');
    for (const test of failed) entries.push(`  ${where} > ${test.fullName}\n${firstLines(test.failureMessages.join('\n'))}`);
    if (failed.length === 0 && file.status === 'failed')
      entries.push(`  ${where}\n${firstLines(file.message || 'the file failed outside its tests')}`);
  }
  return entries;
}
