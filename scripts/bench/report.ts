// The benchmark's output: one line per figure, the real server beside the stack floor (and Prism
// where it answers the same request), with the ratio and the goal.

export interface Row {
  figure: string;
  real: string;
  floor?: string;
  ratio?: string;
  prism?: string;
  goal?: string;
}

const rows: Row[] = [];

export function record(row: Row): void {
  rows.push(row);
  // Printed as it comes, so that a long run shows progress.
  console.log(
    `  ${row.figure}: ${row.real}${row.floor ? `  | floor ${row.floor}` : ''}${row.ratio ? `  | ${row.ratio}` : ''}${row.prism ? `  | prism ${row.prism}` : ''}${row.goal ? `  (goal ${row.goal})` : ''}`,
  );
}

export function section(title: string): void {
  console.log(`\n${title}`);
}

/** The whole table, as Markdown (for docs/performance.md). */
export function printTable(): void {
  const header: Row = { figure: 'figure', real: 'real server', floor: 'stack floor', ratio: 'ratio', prism: 'Prism', goal: 'goal' };
  const cells = (row: Row) => [row.figure, row.real, row.floor ?? '', row.ratio ?? '', row.prism ?? '', row.goal ?? ''];
  const lines = [cells(header), cells(header).map(() => '---'), ...rows.map(cells)];
  console.log('\n' + lines.map((line) => `| ${line.join(' | ')} |`).join('\n'));
}

export const perSecond = (value: number) => `${Math.round(value).toLocaleString('en-US')}/s`;
export const ms = (value: number) => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
export const ratio = (value: number) => `${value.toFixed(2)}×`;
/** CPU time per unit of work, from milliseconds. */
export const cpuMs = (value: number) => (value < 1 ? `${Math.round(value * 1000)} µs` : `${value.toFixed(2)} ms`);
