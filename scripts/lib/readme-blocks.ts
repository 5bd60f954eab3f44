/**
 * The fenced code blocks of a Markdown file, as the documentation's runner (scripts/readme-test.ts)
 * sees them: shell blocks (`sh`, `bash`, `shell`) and TypeScript blocks (`ts`, `typescript`) are
 * code to run; anything else (`text`, `json`, a tree without a language) is output shown to the reader.
 *
 * A block that cannot run as written in a test names why, in an HTML comment on the line before
 * it (blank lines between are allowed), which the reader of the Markdown does not see rendered:
 *
 *   <!-- readme-test: skip (starts the server; the runner starts it itself) -->
 *   <!-- readme-test: background (the mock keeps running); ready: http://127.0.0.1:$MOCK_PORT/healthz -->
 *   <!-- readme-test: server (this page's server runs with test clocks on) -->
 *   <!-- readme-test: standalone (the bench starts servers of its own) -->
 *
 * `skip` does not run the block (the runner lists it with the reason). `background` starts it and
 * leaves it running until every later block of the page has run; `ready:` names a URL
 * (environment variables are expanded) that must answer before the next block runs. `server`
 * marks the block that starts the page's server (`TEST_CLOCKS=true npm start`): the runner then
 * starts none of its own, runs this one in the background, and goes on once it is ready.
 * `standalone` runs the block without the page's server: the runner starts that server before the
 * first block that is not standalone, and a page made only of such blocks has none.
 */
export type BlockKind = 'shell' | 'typescript' | 'output';
export type DirectiveMode = 'skip' | 'background' | 'server' | 'standalone';

export interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  kind: BlockKind;
  text: string;
  directive?: { mode: DirectiveMode; reason: string; ready?: string };
}

const SHELL = new Set(['sh', 'bash', 'shell']);
const TYPESCRIPT = new Set(['ts', 'typescript']);
const DIRECTIVE = /^<!--\s*readme-test:\s*(skip|background|server|standalone)\s*\(([^)]*)\)\s*(?:;\s*ready:\s*(\S+)\s*)?-->\s*$/;

export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const fence = /^(`{3,}|~{3,})\s*([\w+-]*)\s*$/.exec(lines[index]!);
    if (!fence) continue;
    const [, marker, language = ''] = fence;
    const start = index;
    const body: string[] = [];
    for (index += 1; index < lines.length && !lines[index]!.startsWith(marker!); index += 1) body.push(lines[index]!);
    if (index >= lines.length) throw new Error(`line ${start + 1}: a code block that is never closed`);
    const kind: BlockKind = SHELL.has(language) ? 'shell' : TYPESCRIPT.has(language) ? 'typescript' : 'output';
    blocks.push({ line: start + 1, language, kind, text: `${body.join('\n')}\n`, directive: directiveBefore(lines, start) });
  }
  return blocks;
}

function directiveBefore(lines: string[], fenceIndex: number): ReadmeBlock['directive'] {
  let index = fenceIndex - 1;
  while (index >= 0 && lines[index]!.trim() === '') index -= 1;
  const line = lines[index]?.trim() ?? '';
  if (!line.startsWith('<!-- readme-test')) return undefined;
  const match = DIRECTIVE.exec(line);
  if (!match) throw new Error(`line ${index + 1}: cannot read the readme-test comment "${line}" (see scripts/lib/readme-blocks.ts)`);
  return { mode: match[1] as DirectiveMode, reason: match[2]!.trim(), ready: match[3] };
}
